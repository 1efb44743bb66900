import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';

// The bytes of a direct file as they arrive: written into the local file, and, each time a part's
// worth is there, that part read back from the local file (not kept in memory) and uploaded while
// the next one arrives. One part uploads at a time, so that what a killed worker loses is at most
// the part being uploaded and the one being written.

export type PartSink = {
  /** Uploads bytes `firstByte` to `firstByte + bytes` of `file` as part `number`, and records it; `signal` stops it. */
  upload(part: { number: number; firstByte: number; bytes: number; body: Readable }, signal: AbortSignal): Promise<void>;
};

export type PartWriterOptions = {
  file: string;
  /** Where the bytes start: a part's edge. */
  from: number;
  /** The number of the part that starts at `from`. */
  firstPart: number;
  partBytes: number;
  sink: PartSink;
};

export function partWriter({ file, from, firstPart, partBytes, sink }: PartWriterOptions): Writable {
  let handle: FileHandle | undefined;
  let position = from;
  let partStart = from;
  let number = firstPart;
  let uploading: Promise<void> = Promise.resolve();
  // A writer destroyed (a cancel, a failure of the source) stops the part on its way.
  const stopped = new AbortController();

  const uploadUpTo = async (partEnd: number) => {
    const part = { number: number++, firstByte: partStart, bytes: partEnd - partStart };
    partStart = partEnd;
    // The part before must be up before this one starts: never more than one in flight.
    await uploading;
    // An empty file is one empty part, which a read stream cannot give (its end would be -1).
    const body = part.bytes > 0 ? createReadStream(file, { start: part.firstByte, end: part.firstByte + part.bytes - 1 }) : Readable.from([]);
    uploading = sink.upload({ ...part, body }, stopped.signal);
    // Unhandled until awaited: the writer waits for it at the next part or at the end.
    uploading.catch(() => {});
  };

  return new Writable({
    highWaterMark: 1024 * 1024,
    construct(done) {
      // r+ keeps what is before `from`; w+ makes the file when it is not there.
      settle(
        open(file, 'r+')
          .catch(() => open(file, 'w+'))
          .then((opened) => {
            handle = opened;
          }),
        done,
      );
    },
    write(chunk: Buffer, _encoding, done) {
      settle(
        (async () => {
          let written = 0;
          while (written < chunk.length) {
            const { bytesWritten } = await handle!.write(chunk, written, chunk.length - written, position);
            written += bytesWritten;
            position += bytesWritten;
          }
          while (position - partStart >= partBytes) await uploadUpTo(partStart + partBytes);
        })(),
        done,
      );
    },
    final(done) {
      settle(
        (async () => {
          // The last part may be short; a file with no part yet still needs one (even empty).
          if (position > partStart || number === 1) await uploadUpTo(position);
          await uploading;
          await handle!.truncate(position);
          await handle!.close();
          handle = undefined;
        })(),
        done,
      );
    },
    destroy(error, done) {
      stopped.abort();
      const closing = handle?.close() ?? Promise.resolve();
      handle = undefined;
      closing.then(
        () => done(error),
        () => done(error),
      );
    },
  });
}

function settle(work: Promise<void>, done: (error?: Error | null) => void): void {
  work.then(
    () => done(),
    (error: unknown) => done(error as Error),
  );
}

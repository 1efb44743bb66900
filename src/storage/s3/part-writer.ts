import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { fileWriter, type FileWriter } from '../../files/file-writer.ts';

// The bytes of a piece of a direct file as they arrive: written into the local file, and, each time
// a part's worth is there, that part read back from the local file (not kept in memory) and
// uploaded while the next one arrives. One part of a piece uploads at a time, so that what a killed
// worker loses is at most the part being uploaded and the one being written, for each piece.

export type PartSink = {
  /** Uploads bytes `firstByte` to `firstByte + bytes` of `file` as part `number`, and records it; `signal` stops it. */
  upload(part: { number: number; firstByte: number; bytes: number; body: Readable }, signal: AbortSignal): Promise<void>;
};

export type PartWriterOptions = {
  file: string;
  /** Where the bytes start: a part's edge. */
  from: number;
  partBytes: number;
  sink: PartSink;
};

export function partWriter({ file, from, partBytes, sink }: PartWriterOptions): FileWriter {
  let partStart = from;
  let uploading: Promise<void> = Promise.resolve();
  // A writer destroyed (a cancel) or cut short (a failure of the source) stops the part on its way.
  const stopped = new AbortController();

  const uploadUpTo = async (partEnd: number) => {
    // Parts sit at fixed places, so that pieces written at once never share one.
    const part = { number: Math.floor(partStart / partBytes) + 1, firstByte: partStart, bytes: partEnd - partStart };
    partStart = partEnd;
    // The part before must be up before this one starts: never more than one in flight.
    await uploading;
    // An empty file is one empty part, which a read stream cannot give (its end would be -1).
    const body = part.bytes > 0 ? createReadStream(file, { start: part.firstByte, end: part.firstByte + part.bytes - 1 }) : Readable.from([]);
    uploading = sink.upload({ ...part, body }, stopped.signal);
    // Unhandled until awaited: the writer waits for it at the next part or at the end.
    uploading.catch(() => {});
  };

  return fileWriter(file, from, {
    written: async (_from, to) => {
      while (to - partStart >= partBytes) await uploadUpTo(partStart + partBytes);
    },
    ended: async (end) => {
      // The last part may be short; a file with no byte still needs one (even empty).
      if (end > partStart || end === 0) await uploadUpTo(end);
      await uploading;
    },
    closed: () => stopped.abort(),
  });
}

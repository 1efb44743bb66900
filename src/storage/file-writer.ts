import { appendFile, open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';

// Bytes written into a file from a given position on, leaving the rest of the file as it is: the
// pieces of a direct file arrive over several connections, each into its own place. What queues
// while a write is on its way goes in the next one, as one writev.

export type FileWriterHooks = {
  /** After bytes [from, to) are in the file (before the next write starts). */
  written?(from: number, to: number): Promise<void> | void;
  /** After the last write, before the file is closed; `end` is where the bytes ended. */
  ended?(end: number): Promise<void>;
  /** The writer is done with: after its end, or stopped before it (a cancel, a failure of the source). */
  closed?(): Promise<void> | void;
};

// Fewer, larger writes: at 16 KiB each the disk side is the bottleneck of a fast source.
const QUEUED_BYTES = 1024 * 1024;

export function fileWriter(file: string, start: number, hooks: FileWriterHooks = {}): Writable {
  let handle: FileHandle | undefined;
  let position = start;

  const put = async (chunks: Buffer[]) => {
    const from = position;
    let pending = chunks;
    while (pending.length > 0) {
      const { bytesWritten } = await handle!.writev(pending, position);
      position += bytesWritten;
      pending = rest(pending, bytesWritten);
    }
    await hooks.written?.(from, position);
  };

  return new Writable({
    highWaterMark: QUEUED_BYTES,
    construct(done) {
      // Made if missing, never truncated: other writers' bytes may be in it.
      settle(
        appendFile(file, '')
          .then(() => open(file, 'r+'))
          .then((opened) => {
            handle = opened;
          }),
        done,
      );
    },
    write(chunk: Buffer, _encoding, done) {
      settle(put([chunk]), done);
    },
    writev(chunks, done) {
      settle(put(chunks.map(({ chunk }) => chunk as Buffer)), done);
    },
    final(done) {
      settle(
        (async () => {
          await hooks.ended?.(position);
          await handle!.close();
          handle = undefined;
        })(),
        done,
      );
    },
    destroy(error, done) {
      const closing = Promise.all([hooks.closed?.(), handle?.close()]);
      handle = undefined;
      closing.then(
        () => done(error),
        () => done(error),
      );
    },
  });
}

/** The buffers after their first `bytes` bytes: what is left of a writev that wrote less. */
export function rest(chunks: Buffer[], bytes: number): Buffer[] {
  const left: Buffer[] = [];
  let skip = bytes;
  for (const chunk of chunks) {
    if (skip >= chunk.length) {
      skip -= chunk.length;
      continue;
    }
    left.push(skip > 0 ? chunk.subarray(skip) : chunk);
    skip = 0;
  }
  return left;
}

function settle(work: Promise<unknown>, done: (error?: Error | null) => void): void {
  work.then(
    () => done(),
    (error: unknown) => done(error as Error),
  );
}

import { appendFile, open, rename, writeFile, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';

// Bytes written into a file from a given position on, leaving the rest of the file as it is: the
// pieces of a direct file arrive over several connections, each into its own place. What queues
// while a write is on its way goes in the next one, as one writev.

/**
 * A writer of a file's bytes. `cutShort` ends it before its bytes are all there, when the source
 * failed: what it was handed is still written (and recorded by `written`), so that a reset loses
 * only the bytes that never arrived, but `ended` does not take them as the whole.
 */
export type FileWriter = Writable & {
  cutShort(): void;
  /** Calls `listener` after each write with the span [from, to) it put in the file. */
  onLanded(listener: (from: number, to: number) => void): void;
};

export type FileWriterHooks = {
  /** After bytes [from, to) are in the file (before the next write starts). */
  written?(from: number, to: number): Promise<void> | void;
  /** After the last write, before the file is closed, unless cut short; `end` is where the bytes ended. */
  ended?(end: number): Promise<void> | void;
  /** The writer is done with: after its end, or stopped before it (a cancel, a failure of the source). */
  closed?(): Promise<void> | void;
};

// Fewer, larger writes: at 16 KiB each the disk side is the bottleneck of a fast source.
const QUEUED_BYTES = 1024 * 1024;

export function fileWriter(file: string, start: number, hooks: FileWriterHooks = {}): FileWriter {
  let handle: FileHandle | undefined;
  let position = start;
  let cut = false;
  /** The write on its way, which a stop waits for, so that `closed` sees every byte written. */
  let writing: Promise<void> = Promise.resolve();
  const landed: Array<(from: number, to: number) => void> = [];

  const put = (chunks: Buffer[]) => {
    writing = (async () => {
      const from = position;
      position = await writeAt(handle!, chunks, position);
      for (const listener of landed) listener(from, position);
      await hooks.written?.(from, position);
    })();
    return writing;
  };

  const writer = new Writable({
    highWaterMark: QUEUED_BYTES,
    construct(done) {
      // Other writers' bytes may be in it.
      settle(
        openInPlace(file).then((opened) => {
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
          if (!cut) await hooks.ended?.(position);
          await handle!.close();
          handle = undefined;
        })(),
        done,
      );
    },
    destroy(error, done) {
      void (async () => {
        await writing.catch(() => {});
        await Promise.all([hooks.closed?.(), handle?.close()]).catch(() => {});
        handle = undefined;
        done(error);
      })();
    },
  });
  return Object.assign(writer, {
    cutShort: () => {
      cut = true;
      writer.end();
    },
    onLanded: (listener: (from: number, to: number) => void) => void landed.push(listener),
  });
}

/**
 * Stops a writer whose source failed with `error`: cut short, so that what it was handed is still
 * kept, unless the download was cancelled or the writer itself failed, which stop it at once.
 */
export function stopWriter(writer: FileWriter, error: Error, signal: AbortSignal): void {
  if (signal.aborted || writer.errored) writer.destroy(error);
  else writer.cutShort();
}

/** `file` opened for writing in place: made if missing, never truncated. */
export async function openInPlace(file: string): Promise<FileHandle> {
  await appendFile(file, '');
  return open(file, 'r+');
}

/** Writes every byte of `chunks` at `position` (a writev may write less); where they end. */
export async function writeAt(handle: FileHandle, chunks: Buffer[], position: number): Promise<number> {
  let at = position;
  for (let pending = chunks; pending.length > 0;) {
    const { bytesWritten } = await handle.writev(pending, at);
    at += bytesWritten;
    pending = rest(pending, bytesWritten);
  }
  return at;
}

/** Replaces `file` with `text` whole, never half-written: a new file renamed over the old. */
export async function replaceWhole(file: string, text: string): Promise<void> {
  const next = `${file}.next`;
  await writeFile(next, text);
  await rename(next, file);
}

/** The buffers after their first `bytes` bytes: what is left of a writev that wrote less. */
function rest(chunks: Buffer[], bytes: number): Buffer[] {
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

import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';

/** The sha256 state after a file's bytes: digest it, or go on updating it with what follows. */
export async function hashOfFile(file: string, signal?: AbortSignal): Promise<Hash> {
  const hash = createHash('sha256');
  // Fed by hand rather than piped into: a piped hash is finished, and a resumed download still has bytes to add.
  await pipeline(
    createReadStream(file),
    async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) hash.update(chunk);
    },
    { signal },
  );
  return hash;
}

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';

/** The sha256 (hex) of a file's bytes. */
export async function sha256OfFile(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  // Fed by hand: a hash piped into finishes itself, and its digest can then only be read as data.
  await pipeline(
    createReadStream(file),
    async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) hash.update(chunk);
    },
    { signal },
  );
  return hash.digest('hex');
}

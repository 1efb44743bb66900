import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';

/** Read back 1 MiB at a time. */
const READ_BYTES = 1024 * 1024;

/**
 * Feeds bytes `start` to `end` (exclusive) of `file` to `hash`, read into one buffer over and
 * over: a read stream's new buffer for every 64 KiB is garbage that V8 collects only once a great
 * deal of it has piled up. A caller that hashes many spans in
 * turn gives its own `buffer`, for the same reason. Returns where the bytes ended: `end`, or the
 * file's end when that comes first.
 */
export async function hashFileSpan(
  hash: Hash,
  file: string,
  start: number,
  end: number,
  { signal, buffer = Buffer.allocUnsafe(Math.max(1, Math.min(READ_BYTES, end - start))) }: { signal?: AbortSignal; buffer?: Buffer } = {},
): Promise<number> {
  const handle = await open(file, 'r');
  try {
    let at = start;
    while (at < end) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - at), at);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
    return at;
  } finally {
    await handle.close();
  }
}

/** The sha256 (hex) of a file's bytes. */
export async function sha256OfFile(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  await hashFileSpan(hash, file, 0, Infinity, { signal });
  return hash.digest('hex');
}

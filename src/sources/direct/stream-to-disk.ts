import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import { hashOfFile } from '../../storage/hash.ts';
import { ByteMeter, tooLarge } from '../byte-meter.ts';
import { discard, requireWholeBody, transportError } from '../http.ts';
import type { SourceContext } from '../types.ts';
import type { Resumption } from './resume.ts';

// The body streams to disk, never whole in memory, through the meter (progress, and MAX_FILE_BYTES
// held against every byte) and through sha256, so that the file is hashed by the time it is whole.

// Fewer, larger writes: the default 16 KiB makes the disk side the bottleneck of a fast source.
const WRITE_BUFFER_BYTES = 1024 * 1024;

/** Writes the response's body into `file` after its first `from` bytes: the file's size and sha256 once it is whole. */
export async function streamToDisk(ctx: SourceContext, file: string, { response, from, total }: Resumption): Promise<{ sizeBytes: number; sha256: string }> {
  if (total !== null && total > ctx.maxFileBytes) {
    discard(response);
    throw tooLarge(ctx.maxFileBytes, total);
  }
  // A resumed file's hash first catches up on the bytes already on disk.
  const hash = from > 0 ? await hashOfFile(file) : createHash('sha256');
  const meter = new ByteMeter(ctx, total, from);
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      // Bytes past the file's end (a 206 whose body runs on past its Content-Range) never reach
      // the file: a later attempt would resume after them.
      if (total !== null && meter.bytes + chunk.length > total) {
        done(new DownloadError('source_http_error', `The source sent more than the ${total} bytes it said the file has.`));
        return;
      }
      try {
        meter.add(chunk.length);
      } catch (error) {
        done(error as Error);
        return;
      }
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(response.body, counted, createWriteStream(file, { flags: from > 0 ? 'a' : 'w', highWaterMark: WRITE_BUFFER_BYTES }), { signal: ctx.signal });
  } catch (error) {
    throw transportError(error, ctx.signal);
  }
  requireWholeBody(response, meter.bytes, total);
  return { sizeBytes: meter.bytes, sha256: hash.digest('hex') };
}

import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import { ByteMeter, tooLarge } from '../byte-meter.ts';
import { discard, requireWholeBody, transportError } from '../http.ts';
import type { SourceContext } from '../types.ts';
import type { Resumption } from './resume.ts';

// The body streams into the transfer (to disk, and to the bucket with S3), never whole in memory,
// through the meter (progress, and MAX_FILE_BYTES held against every byte) and, when the file
// starts here, through sha256, so that it is hashed by the time it is whole.

/** Writes the response's body into the transfer after its first `from` bytes: the file's size, and its sha256 when it started at 0. */
export async function streamToDisk(ctx: SourceContext, { response, from, total }: Resumption): Promise<{ sizeBytes: number; sha256: string | null }> {
  if (total !== null && total > ctx.maxFileBytes) {
    discard(response);
    throw tooLarge(ctx.maxFileBytes, total);
  }
  // Bytes kept by an earlier attempt may be on another machine: a resumed file is hashed once whole.
  const hash = from > 0 ? null : createHash('sha256');
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
      hash?.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(response.body, counted, ctx.transfer.writer(from), { signal: ctx.signal });
  } catch (error) {
    throw transportError(error, ctx.signal);
  }
  requireWholeBody(response, meter.bytes, total);
  return { sizeBytes: meter.bytes, sha256: hash?.digest('hex') ?? null };
}

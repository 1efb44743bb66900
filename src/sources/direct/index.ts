import { createHash, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import { hashOfFile } from '../../storage/hash.ts';
import { ByteMeter, tooLarge } from '../byte-meter.ts';
import { contentLength, discard, requireStatus, transportError, type SourceResponse } from '../http.ts';
import type { FetchedFile, SourceContext } from '../types.ts';

// A URL that is itself the media file. The body streams to disk (never whole in memory) and
// through sha256; a retry after a reset or a crash continues from the bytes already on disk with
// a Range request, guarded by If-Range so that a changed file starts over instead of splicing.

const PARTIAL = 'direct.part';
// Fewer, larger writes: the default 16 KiB makes the disk side the bottleneck of a fast source.
const WRITE_BUFFER_BYTES = 1024 * 1024;
/** The URL the partial file comes from, which is not the download's URL when that was a page. */
const PARTIAL_SOURCE = 'direct.url';

/** The URL an earlier attempt left bytes of, to resume from; null when there are none. */
export async function resumableDirect(ctx: SourceContext): Promise<string | null> {
  if ((await ctx.storage.size(path.join(ctx.workDir, PARTIAL))) === 0) return null;
  return readFile(path.join(ctx.workDir, PARTIAL_SOURCE), 'utf8').catch(() => null);
}

/**
 * Fetches ctx.url into the working directory. `opened` is a response to a plain GET of it that the
 * caller already has (it looked at the first bytes to know the URL is a file); it is used when
 * there is nothing to resume.
 */
export async function fetchDirect(ctx: SourceContext, opened?: SourceResponse): Promise<FetchedFile> {
  const partial = path.join(ctx.workDir, PARTIAL);
  let have = await ctx.storage.size(partial);
  if (opened && have > 0) discard(opened);
  let response = opened && have === 0 ? opened : await request(ctx, have);

  if (have > 0 && response.status === 416) {
    // Everything was on disk already (a crash between the last byte and the rename) or the file shrank.
    const total = totalFromContentRange(response.headers['content-range']);
    discard(response);
    if (total === have) return finish(partial, have, await hashOfFile(partial), response);
    have = 0;
    response = await request(ctx, have);
  }
  if (have > 0 && (response.status !== 206 || startOfContentRange(response.headers['content-range']) !== have)) {
    // The source ignored the range, or the file changed (If-Range): start again from zero.
    have = 0;
    if (response.status !== 200) {
      discard(response);
      response = await request(ctx, have);
    }
  }
  requireStatus(response, [200, 206]);
  if (have === 0) {
    await truncate(partial).catch(() => {});
    await writeFile(path.join(ctx.workDir, PARTIAL_SOURCE), ctx.url);
    await ctx.rememberValidator(resumeValidator(response.headers));
  }

  const total = response.status === 206 ? totalFromContentRange(response.headers['content-range']) : contentLength(response);
  if (total !== null && total > ctx.maxFileBytes) {
    discard(response);
    throw tooLarge(ctx.maxFileBytes, total);
  }

  const hash = have > 0 ? await hashOfFile(partial) : createHash('sha256');
  const meter = new ByteMeter(ctx, total, have);
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
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
    await pipeline(response.body, counted, createWriteStream(partial, { flags: have > 0 ? 'a' : 'w', highWaterMark: WRITE_BUFFER_BYTES }), { signal: ctx.signal });
  } catch (error) {
    throw transportError(error, ctx.signal);
  }
  if (total !== null && meter.bytes !== total) {
    throw new DownloadError('source_unreachable', `The source closed the connection after ${meter.bytes} of ${total} bytes.`, true);
  }
  return finish(partial, meter.bytes, hash, response);
}

function request(ctx: SourceContext, from: number): Promise<SourceResponse> {
  const headers: Record<string, string> = {};
  if (from > 0) {
    headers.range = `bytes=${from}-`;
    if (ctx.validator) headers['if-range'] = ctx.validator;
  }
  return ctx.http.get(ctx.url, { headers, signal: ctx.signal });
}

function finish(partial: string, size: number, hash: Hash, response: SourceResponse): FetchedFile {
  return { path: partial, sizeBytes: size, sha256: hash.digest('hex'), declaredType: response.headers['content-type'] ?? null };
}

/** A strong ETag or else Last-Modified: what If-Range accepts. */
function resumeValidator(headers: SourceResponse['headers']): string | null {
  const etag = headers.etag;
  if (etag && !etag.startsWith('W/')) return etag;
  return headers['last-modified'] ?? null;
}

function startOfContentRange(value: string | undefined): number | null {
  const match = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(value ?? '');
  return match ? Number(match[1]) : null;
}

function totalFromContentRange(value: string | undefined): number | null {
  const match = /\/(\d+)$/.exec(value ?? '');
  return match ? Number(match[1]) : null;
}

import { createDecipheriv } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import { contentLength, discard, requireStatus, requireWholeBody, transportError, type SourceHttp, type SourceResponse } from '../http.ts';
import type { ByteRange } from '../types.ts';
import type { KeyCache } from './keys.ts';
import type { Piece } from './layout.ts';
import type { ByteMeter } from '../byte-meter.ts';

export type PieceDeps = { http: SourceHttp; keys: KeyCache; meter: ByteMeter; signal: AbortSignal };

/**
 * Downloads one init section or segment, decrypted, into its file. The file appears (by rename)
 * only when it is whole, so that a later attempt can trust every piece file it finds. `copy`
 * tells a second request for the same piece (see hedge.ts) to write apart from the first.
 */
export async function fetchPiece(piece: Piece, deps: PieceDeps, copy = 0): Promise<void> {
  const { meter, signal } = deps;
  const decrypt = piece.key ? createDecipheriv('aes-128-cbc', await deps.keys.get(piece.key.uri, signal), Buffer.from(piece.key.iv, 'hex')) : new PassThrough();
  const range = piece.byteRange;
  const response = await deps.http.get(piece.url, { headers: range ? { range: `bytes=${range.offset}-${range.offset + range.length - 1}` } : {}, signal });
  const body = bodyOf(response, range, meter);
  const expected = range?.length ?? contentLength(response);

  let received = 0;
  const count = async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      received += chunk.length;
      meter.add(chunk.length);
      yield chunk;
    }
  };
  const part = `${piece.file}.part${copy}`;
  try {
    await pipeline(body, count, decrypt, createWriteStream(part), { signal });
    requireWholeBody(response, received, expected);
    await rename(part, piece.file);
  } catch (error) {
    meter.remove(received);
    await rm(part, { force: true });
    if (/^ERR_OSSL/.test((error as { code?: string }).code ?? '')) {
      throw new DownloadError('processing_failed', `A segment could not be decrypted with its AES-128 key (${piece.url}).`);
    }
    throw transportError(error, signal);
  }
}

/** The body to keep: a range the source did not honour (a 200 with the whole file) is cut out of it. */
function bodyOf(response: SourceResponse, range: ByteRange | undefined, meter: ByteMeter): AsyncIterable<Buffer> {
  requireStatus(response, range ? [200, 206] : [200]);
  if (!range) return response.body;
  if (response.status === 200) return slice(response.body, range, meter);
  const asked = `bytes ${range.offset}-${range.offset + range.length - 1}/`;
  const answered = response.headers['content-range'] ?? '';
  if (!answered.startsWith(asked)) {
    discard(response);
    throw new DownloadError('source_http_error', `The source answered ${answered || 'no Content-Range'} to a request for ${asked}… of ${response.url}.`);
  }
  return response.body;
}

async function* slice(chunks: AsyncIterable<Buffer>, range: ByteRange, meter: ByteMeter): AsyncGenerator<Buffer> {
  let position = 0;
  let wanted = range.length;
  for await (const chunk of chunks) {
    const from = Math.max(0, range.offset - position);
    position += chunk.length;
    meter.discard(Math.min(from, chunk.length));
    if (from >= chunk.length) continue;
    const piece = chunk.subarray(from, from + wanted);
    wanted -= piece.length;
    yield piece;
    // Returning ends the loop, which destroys the response: the rest of the file is not needed.
    if (wanted === 0) return;
  }
}

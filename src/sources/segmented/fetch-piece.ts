import { createDecipheriv } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import type { ByteMeter } from '../../net/byte-meter.ts';
import { contentLength, discard, requireStatus, requireWholeBody, transportError, type SourceHttp, type SourceResponse } from '../../net/guarded-client.ts';
import type { ByteRange } from '../types.ts';
import type { KeyCache } from './keys.ts';
import type { Piece } from './layout.ts';
import type { TrackFile } from './track-file.ts';

export type PieceDeps = { http: SourceHttp; keys: KeyCache; meter: ByteMeter; signal: AbortSignal };

/**
 * Downloads one init section or segment, decrypted, into its place in its track's file. It counts
 * as there only once it is whole, so that a later attempt can trust every piece the file records.
 */
export async function fetchPiece(piece: Piece, into: TrackFile, deps: PieceDeps): Promise<void> {
  const { meter, signal } = deps;
  const decipher = piece.key ? createDecipheriv('aes-128-cbc', await deps.keys.get(piece.key.uri, signal), Buffer.from(piece.key.iv, 'hex')) : null;
  const range = piece.byteRange;
  const response = await deps.http.get(piece.url, { headers: range ? { range: `bytes=${range.offset}-${range.offset + range.length - 1}` } : {}, signal });
  const body = bodyOf(response, range, meter);
  const expected = range?.length ?? contentLength(response);

  let received = 0;
  // Counted and decrypted in one step: a stream more per piece is measurable on a stream of many small ones.
  const decrypted = async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      received += chunk.length;
      meter.add(chunk.length);
      const plain = decipher ? decipher.update(chunk) : chunk;
      if (plain.length > 0) yield plain;
    }
    if (decipher) yield decipher.final();
  };
  const sink = into.take(piece.index);
  try {
    await pipeline(body, decrypted, sink.writable, { signal });
    requireWholeBody(response, received, expected);
    sink.commit();
  } catch (error) {
    sink.discard();
    meter.remove(received);
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

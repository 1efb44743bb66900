import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import type { ByteMeter } from '../byte-meter.ts';
import type { BulkResponse } from '../bulk-get.ts';
import { discard, transportError, type SourceResponse } from '../http.ts';
import type { SourceContext } from '../types.ts';
import type { Piece } from './pieces.ts';

// A piece's bytes stream from its response into the transfer (to disk, and to the bucket with S3),
// never whole in memory, through the meter (progress, and MAX_FILE_BYTES held against every byte)
// and, when one connection fetches the file from its start, through sha256.

export type PieceFetch = {
  piece: Piece;
  /** The first response of a file (Node's client), or a ranged one read into reused buffers. */
  response: SourceResponse | BulkResponse;
  /** Where the response's body ends by its own word (the file's length, or its range's end); null when unknown. */
  responseEnd: number | null;
};

/**
 * Writes the response's body into the transfer from the piece's position up to its end (Infinity:
 * up to the body's end, for a file of unknown length). A piece that ends before its response does (its second half was taken by
 * another connection, or the rest of the file is kept already) lets the response go there.
 */
export async function streamPiece(
  ctx: SourceContext,
  { piece, response, responseEnd }: PieceFetch,
  meter: ByteMeter,
  options: { hash?: { update(bytes: Buffer): void }; signal: AbortSignal },
): Promise<void> {
  const take = (chunk: Buffer): { bytes: Buffer; enough: boolean } => {
    const room = piece.end - piece.position;
    // Bytes past the file's end (a 206 whose body runs on past its Content-Range) never reach
    // the file: a later attempt would resume after them.
    if (chunk.length > room && piece.end === responseEnd) {
      throw new DownloadError('source_http_error', `The source sent more than it said it would: its answer was to end at byte ${responseEnd}.`);
    }
    const bytes = chunk.length > room ? chunk.subarray(0, room) : chunk;
    meter.add(bytes.length);
    options.hash?.update(bytes);
    piece.position += bytes.length;
    return { bytes, enough: piece.position >= piece.end };
  };
  const writer = ctx.transfer.writer(piece.position);
  piece.startReading();
  try {
    // The body is read only by `take`, so that its connection, let go where the piece ends, is
    // no failure of the pipeline (which would drop the writes still queued).
    if ('readInto' in response) await response.readInto(writer, take);
    else await pipeline(within(response.body, take), writer, { signal: options.signal });
  } catch (error) {
    // Not before the writer has let go of the file and recorded what it kept: the working folder
    // may be removed next.
    if (!writer.closed) await once(writer, 'close');
    throw transportError(error, options.signal);
  } finally {
    if ('readInto' in response || !response.body.readableEnded) discard(response);
  }
  const expected = piece.end === Infinity ? responseEnd : piece.end;
  if (expected !== null && piece.position !== expected) {
    throw new DownloadError(
      'source_unreachable',
      `The source closed the connection at byte ${piece.position} of the ${expected} it was to send of ${response.url}.`,
      true,
    );
  }
}

async function* within(body: AsyncIterable<Buffer>, take: (chunk: Buffer) => { bytes: Buffer; enough: boolean }): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    const { bytes, enough } = take(chunk);
    yield bytes;
    if (enough) return;
  }
}

import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { DownloadError } from '../../core/errors.ts';
import { stopWriter, type FileWriter } from '../../files/file-writer.ts';
import type { BulkResponse } from '../../net/bulk-get.ts';
import type { ByteMeter } from '../../net/byte-meter.ts';
import { discard, transportError, type SourceResponse } from '../../net/guarded-client.ts';
import type { Transfer } from '../../storage/transfer.ts';
import type { Piece } from './pieces.ts';

// A piece's bytes stream from its response into the transfer (to disk, and to the bucket with S3),
// never whole in memory, through the meter (progress, and MAX_FILE_BYTES held against every byte).

export type PieceFetch = {
  piece: Piece;
  /** The first response of a file (Node's client), or a ranged one read into reused buffers. */
  response: SourceResponse | BulkResponse;
  /** Where the response's body ends by its own word (the file's length, or its range's end); null when unknown. */
  responseEnd: number | null;
};

/**
 * Writes the response's body into `into` (the transfer, or a file of its own) from the piece's position up to its end (Infinity:
 * up to the body's end, for a file of unknown length). A piece that ends before its response does (its second half was taken by
 * another connection, or the rest of the file is kept already) lets the response go there.
 */
export async function streamPiece(
  into: Pick<Transfer, 'writer'>,
  { piece, response, responseEnd }: PieceFetch,
  meter: ByteMeter,
  options: { signal: AbortSignal; /** Hears each span once it is in the file. */ landed?: (from: number, to: number) => void },
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
    piece.position += bytes.length;
    return { bytes, enough: piece.position >= piece.end };
  };
  const writer = into.writer(piece.position);
  if (options.landed) writer.onLanded(options.landed);
  piece.startReading();
  try {
    if ('readInto' in response) await response.readInto(writer, take);
    else await bodyInto(response.body, take, writer, options.signal);
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

type Take = (chunk: Buffer) => { bytes: Buffer; enough: boolean };

/**
 * Writes the body, as `take` cuts it, into the writer, then ends it. A body that fails (a reset,
 * a stall) has what it gave written all the same and the writer cut short: a reset loses only the
 * bytes that never arrived, not those still queued for the disk. A cancel stops both at once.
 */
async function bodyInto(body: Readable, take: Take, writer: FileWriter, signal: AbortSignal): Promise<void> {
  const writing = finished(writer);
  // Heard here when the writer fails while the body is read; at the end otherwise.
  writing.catch(() => {});
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const { bytes, enough } = take(chunk);
      if (!writer.write(bytes)) await Promise.race([once(writer, 'drain', { signal }), writing]);
      if (enough) break;
    }
  } catch (error) {
    stopWriter(writer, error as Error, signal);
    throw error;
  }
  writer.end();
  await writing;
}

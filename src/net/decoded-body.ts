import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, type BrotliDecompress, type Gunzip } from 'node:zlib';

// Playlists, manifests and pages compress well, so they are asked for compressed; media bytes are
// not (they do not compress, and ranges of an encoded body mean nothing). A server may compress
// what was not asked for (nginx's gzip_static always): whatever arrives is decoded, and the
// decoded bytes are what every bound counts, so a small body that inflates without end is cut at
// the same limit as a large one.

/** What a request for a document accepts. */
export const DOCUMENT_ENCODINGS = 'gzip, br';

const DECODERS: Record<string, () => Gunzip | BrotliDecompress> = { gzip: createGunzip, 'x-gzip': createGunzip, br: createBrotliDecompress };

/** The response's body as the source's file was before it was encoded; null when it is not encoded in a way read here. */
export function decodedBody(response: IncomingMessage): Readable | null {
  const coding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = DECODERS[coding]?.();
  if (!decoder) return null;
  // The response's errors reach the decoder's reader, and a reader that stops (at a limit)
  // destroys the response with the decoder.
  pipeline(response, decoder, () => {});
  return decoder;
}

import { DownloadError } from '../core/errors.ts';
import { DOCUMENT_NAMES, type DocumentKind } from './document-kinds.ts';
import { requireStatus, transportError, type SourceHttp, type SourceResponse } from './http.ts';

// Playlists, manifests, pages and keys are read whole into memory, so each kind has a ceiling, and
// reading stops at the first byte past it: a URL that streams without end cannot fill the memory.

export type BodyLimit = { maxBytes: number; tooLarge(url: string): string };

const MIB = 1024 * 1024;

/** Far above any real one (ten hours of one-second segments is about 2 MB of playlist). */
const MAX_DOCUMENT_BYTES: Record<DocumentKind, number> = { hls: 16 * MIB, dash: 16 * MIB, page: 8 * MIB, ttml: 5 * MIB };

function documentLimit(kind: DocumentKind): BodyLimit {
  const maxBytes = MAX_DOCUMENT_BYTES[kind];
  return { maxBytes, tooLarge: (url) => `The ${DOCUMENT_NAMES[kind]} at ${url} is larger than ${maxBytes} bytes.` };
}

async function readWhole(response: SourceResponse, limit: BodyLimit, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > limit.maxBytes) throw new DownloadError('unsupported_source', limit.tooLarge(response.url));
      response.floor.arrived((chunk as Buffer).length);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    throw transportError(error, signal);
  }
  return Buffer.concat(chunks);
}

/**
 * The body of a GET of `url`, whole; `url` in the result is where it really came from, after
 * redirects. A `document` (playlist, manifest, page) is asked for compressed.
 */
export async function fetchWhole(
  http: SourceHttp,
  url: string,
  limit: BodyLimit,
  signal: AbortSignal,
  document = false,
): Promise<{ url: string; body: Buffer }> {
  const response = requireStatus(await http.get(url, { signal, document }));
  return { url: response.url, body: await readWhole(response, limit, signal) };
}

/** The bytes of a document whose response is already open (and known to be a success), for the sandbox to decode. */
export function readDocument(response: SourceResponse, kind: DocumentKind, signal: AbortSignal): Promise<Buffer> {
  return readWhole(response, documentLimit(kind), signal);
}

/** A document fetched whole, as bytes for the sandbox to decode, with the URL it really came from. */
export function fetchDocument(http: SourceHttp, url: string, kind: DocumentKind, signal: AbortSignal): Promise<{ url: string; body: Buffer }> {
  return fetchWhole(http, url, documentLimit(kind), signal, true);
}

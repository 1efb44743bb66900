import type { SourceHttp, SourceResponse } from '../net/guarded-client.ts';
import { fetchWhole, readWhole, type BodyLimit } from '../net/whole-body.ts';
import { DOCUMENT_NAMES, type DocumentKind } from './document-kinds.ts';

// Playlists, manifests, pages and keys are read whole into memory, so each kind has a ceiling.

const MIB = 1024 * 1024;

/** Far above any real one (ten hours of one-second segments is about 2 MB of playlist). */
const MAX_DOCUMENT_BYTES: Record<DocumentKind, number> = { hls: 16 * MIB, dash: 16 * MIB, page: 8 * MIB, ttml: 5 * MIB };

/**
 * The most of a feed a collection reads. A feed is parsed as it streams and read only until enough
 * entries are known, so memory does not grow with it; this bounds the time a feed of items without
 * media can take.
 */
export const MAX_FEED_BYTES = 16 * MIB;

function documentLimit(kind: DocumentKind): BodyLimit {
  const maxBytes = MAX_DOCUMENT_BYTES[kind];
  return { maxBytes, tooLarge: (url) => `The ${DOCUMENT_NAMES[kind]} at ${url} is larger than ${maxBytes} bytes.` };
}

/** The bytes of a document whose response is already open (and known to be a success), for the sandbox to decode. */
export function readDocument(response: SourceResponse, kind: DocumentKind, signal: AbortSignal): Promise<Buffer> {
  return readWhole(response, documentLimit(kind), signal);
}

/** A document fetched whole, as bytes for the sandbox to decode, with the URL it really came from. */
export function fetchDocument(http: SourceHttp, url: string, kind: DocumentKind, signal: AbortSignal): Promise<{ url: string; body: Buffer }> {
  return fetchWhole(http, url, documentLimit(kind), signal, true);
}

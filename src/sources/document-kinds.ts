import { DownloadError } from '../core/errors.ts';

// The documents a download reads whole and parses (playlists, manifests, pages, TTML subtitles), and what one that
// fails to parse is called in the failure.

export const DOCUMENT_NAMES = { hls: 'HLS playlist', dash: 'DASH manifest', page: 'page', ttml: 'TTML subtitles' } as const;

export type DocumentKind = keyof typeof DOCUMENT_NAMES;

/** A parser's own failure (a stack overflow on deep nesting, say): the document is at fault. */
export function unreadable(kind: DocumentKind, error: unknown): DownloadError {
  const reason = error instanceof Error ? error.message : String(error);
  return new DownloadError('unsupported_source', `The ${DOCUMENT_NAMES[kind]} could not be read (${reason}).`);
}

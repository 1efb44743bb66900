import { DownloadError, type ErrorCode } from '../../core/errors.ts';
import type { DashInput } from '../dash/index.ts';
import type { HlsReading, HlsReadInput } from '../hls/read-playlist.ts';
import type { PageMedia } from '../html/page-media.ts';
import type { MediaPlan } from '../types.ts';

// What crosses between the service and the document reader's thread (plain data both ways), and
// what a document that fails to read is called in the failure.

export type DocumentRequests = {
  hls: { input: HlsReadInput; reply: HlsReading };
  dash: { input: DashInput; reply: MediaPlan };
  page: { input: { html: string; pageUrl: string }; reply: PageMedia };
};

export type DocumentKind = keyof DocumentRequests;

export type DocumentRequest = { [K in DocumentKind]: { kind: K; input: DocumentRequests[K]['input'] } }[DocumentKind];

export type DocumentReply = { ok: true; value: unknown } | { ok: false; error: { code: ErrorCode; message: string; retryable: boolean } };

export const DOCUMENT_NAMES: Record<DocumentKind, string> = { hls: 'HLS playlist', dash: 'DASH manifest', page: 'page' };

/** A parser's own failure (a stack overflow on deep nesting, say): the document is at fault. */
export function unreadable(kind: DocumentKind, error: unknown): DownloadError {
  const reason = error instanceof Error ? error.message : String(error);
  return new DownloadError('unsupported_source', `The ${DOCUMENT_NAMES[kind]} could not be read (${reason}).`);
}

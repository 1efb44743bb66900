import type { ErrorCode } from '../../core/errors.ts';
import type { DashInput } from '../dash/index.ts';
import type { DocumentKind } from '../document-kinds.ts';
import type { HlsReading, HlsReadInput } from '../hls/read-playlist.ts';
import type { PageMedia } from '../html/page-media.ts';
import type { Cue } from '../ttml/to-webvtt.ts';
import type { MediaPlan } from '../types.ts';

// What crosses between the service and the sandbox's thread: plain data both ways.

export type DocumentRequests = {
  hls: { input: HlsReadInput; reply: HlsReading };
  dash: { input: DashInput; reply: MediaPlan };
  page: { input: { html: string; pageUrl: string }; reply: PageMedia };
  ttml: { input: { xml: string }; reply: Cue[] };
};

export type DocumentRequest = { [K in DocumentKind]: { kind: K; input: DocumentRequests[K]['input'] } }[DocumentKind];

export type DocumentReply = { ok: true; value: unknown } | { ok: false; error: { code: ErrorCode; message: string; retryable: boolean } };

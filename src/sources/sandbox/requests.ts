import type { ErrorCode } from '../../core/errors.ts';
import type { DashInput } from '../dash/index.ts';
import type { DocumentKind } from '../document-kinds.ts';
import type { HlsReading, HlsReadInput } from '../hls/read-playlist.ts';
import type { PageMedia } from '../html/page-media.ts';
import type { ListedPage } from '../listing/page.ts';
import type { Cue } from '../ttml/to-webvtt.ts';
import type { MediaPlan } from '../types.ts';

// What crosses between the service and the sandbox's thread: plain data both ways. A fetched
// document goes as its bytes, moved rather than copied, and is decoded over there, off the API's
// thread.

/** A reader's input as it crosses: its document's bytes in place of its text. */
type AsBytes<Input extends { text: string }> = Omit<Input, 'text'> & { bytes: Uint8Array };

export type DocumentRequests = {
  hls: { input: AsBytes<HlsReadInput>; reply: HlsReading };
  dash: { input: AsBytes<DashInput>; reply: MediaPlan };
  /** The page reader's media, or with `listLimit` (a collection's limit) the page as a collection lists it. */
  page: { input: { bytes: Uint8Array; pageUrl: string; listLimit?: number }; reply: PageMedia | ListedPage };
  ttml: { input: { xml: string }; reply: Cue[] };
};

export type DocumentRequest = { [K in DocumentKind]: { kind: K; input: DocumentRequests[K]['input'] } }[DocumentKind];

export type DocumentReply = { ok: true; value: unknown } | { ok: false; error: { code: ErrorCode; message: string; retryable: boolean } };

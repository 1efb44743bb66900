import { DownloadError } from '../core/errors.ts';
import { detectContainer } from '../media/container.ts';
import { MPEG_TS } from '../media/containers.ts';
import { describe } from '../media/describe.ts';
import { probe } from '../media/probe.ts';
import { remux } from '../media/remux.ts';
import { detectKind } from './detect.ts';
import { fetchDirect } from './direct/index.ts';
import { resumableDirect } from './direct/resume.ts';
import type { DocumentReader } from './documents/reader.ts';
import { planHls } from './hls/index.ts';
import { discard, requireStatus, transportError, type SourceResponse } from './http.ts';
import { peek } from './peek.ts';
import { fetchPlan, type SegmentStats } from './segmented/index.ts';
import { readDocument } from './small-bodies.ts';
import type { Quality } from '../core/quality.ts';
import type { FetchedFile, MediaPlan, SourceContext } from './types.ts';

// Any URL a client posts: what it is (a file, an HLS or DASH manifest, a page) is decided from the
// response itself, its first bytes before its declared type, and a page is searched for the media
// it carries, which is then fetched as its own kind.

export type MediaContext = SourceContext & { quality: Quality; ffmpeg: string; documents: DocumentReader; maxSegments: number; segmentConcurrency: number };

/** What the URL turned out to be: a file, an HLS or DASH stream, or a page that embeds one. */
export type SourceKind = 'direct' | 'hls' | 'dash' | 'html';

export type FetchedMedia = FetchedFile & {
  source: SourceKind;
  /** For HLS and DASH: how many segments, how many retries, the slowest one. */
  segments?: SegmentStats;
  mime: string;
  ext: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  /** A better file name than the URL's: the page's title, or the name a direct file's source gave it. */
  title: string | null;
};

const HEAD_BYTES = 1024;
/** Candidates of a page tried before giving up: the first usually works, the rest are fallbacks. */
const MAX_PAGE_CANDIDATES = 5;

export async function fetchMedia(ctx: MediaContext): Promise<FetchedMedia> {
  try {
    // Bytes left by an earlier attempt are resumed at once, without asking what the URL is again.
    const resumable = await resumableDirect(ctx);
    if (resumable) return await fromDirect({ ...ctx, url: resumable });
    return await fetchUrl(ctx, ctx.url, true);
  } catch (error) {
    // The readers that retry on their own classify their failures where they happen; a connection
    // failure that reaches here unclassified (the first KiB, read to tell what the URL is, say) is
    // still the contract's code, not an internal error.
    throw transportError(error, ctx.signal);
  }
}

async function fetchUrl(ctx: MediaContext, url: string, pagesAllowed: boolean): Promise<FetchedMedia> {
  const response = requireStatus(await ctx.http.get(url, { signal: ctx.signal }));
  const { head, body } = await peek(response.body, HEAD_BYTES, response.floor);
  const opened: SourceResponse = { ...response, body };
  const kind = await detectKind({ url: response.url, contentType: response.headers['content-type'] ?? null, head });
  const target = { ...ctx, url };
  switch (kind) {
    case 'direct':
      ctx.phaseEnded('resolve');
      return fromDirect(target, opened);
    case 'hls': {
      const text = await readDocument(opened, 'hls', ctx.signal);
      return fromPlan(target, await planHls({ ...ctx, url: response.url, text }), 'hls');
    }
    case 'dash': {
      const text = await readDocument(opened, 'dash', ctx.signal);
      return fromPlan(target, await ctx.documents.dash({ url: response.url, text, quality: ctx.quality, maxSegments: ctx.maxSegments }, ctx.signal), 'dash');
    }
    case 'html':
      if (pagesAllowed) return fromPage(target, response.url, await readDocument(opened, 'page', ctx.signal));
      break;
    case null:
      break;
  }
  discard(opened);
  throw new DownloadError('unsupported_source', `No video or audio was found at ${url}.`);
}

async function fromDirect(ctx: MediaContext, opened?: SourceResponse): Promise<FetchedMedia> {
  const fetched = await fetchDirect(ctx, opened);
  await ctx.processing();
  const container = await detectContainer(fetched.path, fetched.declaredType);
  if (!container) throw new DownloadError('unsupported_source', `No video or audio was found at ${ctx.url}.`);
  if (container === MPEG_TS) {
    // A transport stream plays in few places as a file; its H.264/AAC go into MP4 as they are.
    const remuxed = await remux({
      ffmpeg: ctx.ffmpeg,
      inputs: [fetched.path],
      output: `${fetched.path}.remuxed`,
      maxBytes: ctx.maxFileBytes,
      signal: ctx.signal,
      declaredType: fetched.declaredType,
    });
    ctx.phaseEnded('remux');
    const described = await describe(ctx.ffmpeg, remuxed, ctx.signal);
    ctx.phaseEnded('probe');
    return { ...described, declaredType: remuxed.mime, title: fetched.dispositionName, source: 'direct' };
  }
  // The file is handed back as it came, so ffmpeg must find audio or video in it: a container's
  // first bytes with nothing playable behind them (a forged or cut-off file) are no download.
  const info = await probe({ ffmpeg: ctx.ffmpeg, file: fetched.path, signal: ctx.signal, declaredType: fetched.declaredType }).catch((error: unknown) => {
    if (error instanceof DownloadError && error.code === 'processing_failed') return error;
    throw error;
  });
  if (info instanceof DownloadError || !info.streams.some((stream) => stream.kind === 'video' || stream.kind === 'audio')) {
    const reason = info instanceof DownloadError ? info.message : `no audio or video stream in this ${container.mime} file`;
    throw new DownloadError('unsupported_source', `No playable video or audio was found at ${ctx.url} (${reason}).`);
  }
  ctx.phaseEnded('probe');
  const { dispositionName, ...file } = fetched;
  return {
    ...file,
    mime: container.mime,
    ext: container.ext,
    durationSeconds: info.durationSeconds,
    width: info.width,
    height: info.height,
    title: dispositionName,
    source: 'direct',
  };
}

async function fromPlan(ctx: MediaContext, plan: MediaPlan, source: 'hls' | 'dash'): Promise<FetchedMedia> {
  ctx.phaseEnded('resolve');
  const fetched = await fetchPlan(ctx, plan, ctx.ffmpeg, { concurrency: ctx.segmentConcurrency });
  return { ...fetched, title: null, source };
}

async function fromPage(ctx: MediaContext, pageUrl: string, html: string): Promise<FetchedMedia> {
  const { candidates, title } = await ctx.documents.page({ html, pageUrl }, ctx.signal);
  let lastError: DownloadError | undefined;
  for (const candidate of candidates.slice(0, MAX_PAGE_CANDIDATES)) {
    try {
      const media = await fetchUrl(ctx, candidate, false);
      return { ...media, title: title ?? media.title, source: 'html' };
    } catch (error) {
      // A dead or unusable candidate gives way to the next; anything else (a stall, a full disk,
      // a shutdown) is the download's own problem and ends it here.
      if (!(error instanceof DownloadError) || !isCandidateFailure(error)) throw error;
      lastError = error;
    }
  }
  if (lastError) throw lastError;
  throw new DownloadError('unsupported_source', `No video was found in the page at ${pageUrl}.`);
}

function isCandidateFailure(error: DownloadError): boolean {
  return error.code === 'unsupported_source' || (error.code === 'source_http_error' && !error.retryable);
}

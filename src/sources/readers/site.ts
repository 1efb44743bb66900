import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../../core/errors.ts';
import { arrive } from '../arrival.ts';
import { dispatch } from '../dispatch.ts';
import { NothingFound, type Arrival, type FetchedMedia, type MediaContext, type SourceKind, type SourceReader } from '../reader.ts';
import { chooseFormats, type Chosen, type FormatChoice } from '../site/formats.ts';
import type { ExtractionProxy } from '../site/proxy.ts';
import { extract, type SiteInfo, type YtDlp } from '../site/ytdlp.ts';
import type { MediaPlan, SubtitleOffer } from '../types.ts';

/** Subtitle languages of a site looked at, at most. */
const MAX_SITE_SUBTITLES = 64;

export type SiteReaderDeps = { ytdlp: YtDlp; proxy: ExtractionProxy; timeoutMs: number };

/** How the formats a site lists are fetched, by the readers of their kind (readers/index.ts). */
export type FormatReaders = {
  /** The readers of a manifest (HLS, DASH). */
  streams: readonly SourceReader[];
  /** Fetches `ctx.url` as one file, known to be one. */
  file(ctx: MediaContext): Promise<FetchedMedia>;
  /** Fetches a plan's tracks (a separate video and audio file) and merges them into one file. */
  tracks(ctx: MediaContext, plan: MediaPlan, kind: SourceKind): Promise<FetchedMedia>;
};

/**
 * A video site's page, read by yt-dlp: it only extracts, through the service's proxy (so it reaches
 * only what the address policy allows), and the formats it lists are fetched by the service's own
 * readers, with the headers the site asks for. `dedicated` runs only the extractors of named sites
 * (yt-dlp refuses any other URL before it connects anywhere, so asking costs a process start, no
 * request); `generic` runs only its generic page reader, for what the built-in page reader missed.
 */
export class SiteReader implements SourceReader {
  readonly kind = 'site';

  constructor(
    private readonly deps: SiteReaderDeps,
    private readonly extractors: 'dedicated' | 'generic',
    private readonly formats: FormatReaders,
  ) {}

  takes(arrival: Arrival): boolean {
    return arrival.detected === 'page' || arrival.detected === null;
  }

  async read(ctx: MediaContext, arrival: Arrival): Promise<FetchedMedia> {
    const pass = this.deps.proxy.open();
    const info = await extract(this.deps.ytdlp, {
      url: arrival.url,
      proxyUrl: pass.url,
      extractors: this.extractors,
      timeoutMs: this.deps.timeoutMs,
      signal: ctx.signal,
      refusedHosts: () => pass.refused,
      exceeded: () => pass.exceeded(),
      revoke: () => pass.revoke(),
    }).catch((error: unknown) => {
      // No extractor of this kind for the URL: the next reader may know better.
      if (error instanceof DownloadError && error.code === 'unsupported_source') throw new NothingFound(error.message);
      throw error;
    });
    const title = info.title ?? null;
    ctx.found({ kind: 'site', extractor: info.extractor_key ?? info.extractor ?? null, title });
    const media = await fetchChoice(ctx, chooseFormats(info, ctx.quality, ctx.mode), this.formats);
    return { ...media, title: title ?? media.title, source: 'site', subtitles: [...(media.subtitles ?? []), ...subtitleOffers(info)] };
  }
}

/** The site's WebVTT subtitles (a site lists several formats of each; others are not read). */
function subtitleOffers(info: SiteInfo): SubtitleOffer[] {
  return Object.entries(info.subtitles ?? {})
    .slice(0, MAX_SITE_SUBTITLES)
    .flatMap(([language, entries]) => {
      const vtt = entries.find((entry) => entry.ext === 'vtt' && /^https?:\/\//i.test(entry.url));
      return vtt
        ? [
            {
              url: vtt.url,
              language: /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/.test(language) ? language : null,
              label: vtt.name ?? null,
              format: 'file' as const,
            },
          ]
        : [];
    });
}

/** The chosen formats, each fetched by the reader of its kind. */
async function fetchChoice(ctx: MediaContext, choice: FormatChoice, formats: FormatReaders): Promise<FetchedMedia> {
  const picture = choice.muxed ?? choice.video ?? choice.audio!;
  // Files of their own, apart from the page's: a retry extracts again (a site's links expire) and
  // resumes what is here from the new link, instead of the old one without the site's headers.
  const workDir = path.join(ctx.workDir, 'site');
  await mkdir(workDir, { recursive: true });
  const target = (format: Chosen): MediaContext => ({
    ...ctx,
    url: format.manifest_url ?? format.url,
    http: ctx.http.withHeaders(format.headers, format.manifest_url ?? format.url),
    workDir,
    // The download was found as a site's; what its formats turn out to be does not change that.
    found: () => {},
  });
  if (choice.kind !== 'direct') {
    // A stream is planned by the service's own HLS or DASH reader from its manifest: the same
    // quality, and the separate audio the manifest names, whichever formats yt-dlp listed.
    const stream = target(picture);
    return dispatch(stream, await arrive(stream, stream.url), formats.streams);
  }
  if (choice.video && choice.audio) {
    const plan = {
      tracks: [
        { kind: 'video' as const, segments: [{ url: choice.video.url }] },
        { kind: 'audio' as const, segments: [{ url: choice.audio.url }] },
      ],
    };
    return formats.tracks(target(choice.video), plan, 'site');
  }
  ctx.phaseEnded('resolve');
  return formats.file(target(picture));
}

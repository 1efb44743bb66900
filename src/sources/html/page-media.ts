import { labelOf } from '../../core/text.ts';
import { videoObjectUrls } from './json-ld.ts';
import { metaContents, openGraphVideoUrls } from './meta-tags.ts';
import { readPageParts } from './page-parts.ts';
import { manifestUrlsInText } from './stream-urls.ts';
import { trackLanguage, videoTrackReader, type TrackElement } from './video-tracks.ts';

/** A subtitle or caption `<track>` of one of the page's videos. */
export type PageSubtitle = {
  /** Absolute http(s), without its fragment. */
  url: string;
  /** The track's `srclang` when it looks like a BCP 47 tag (`en`, `pt-BR`). */
  language: string | null;
  /** The track's `label`, without control characters, at most 200 characters. */
  label: string | null;
};

export type PageMedia = {
  /** Absolute http(s) URLs, most trustworthy first, without duplicates; the first MAX_CANDIDATES. */
  candidates: string[];
  title: string | null;
  /** The subtitle and caption tracks of the page's `<video>`s in document order, one per URL; the first MAX_SUBTITLES. */
  subtitles: PageSubtitle[];
};

/** The page URL, or the page's `<base href>` resolved against it. */
export function baseUrl(href: string | undefined, pageUrl: string): string {
  return href !== undefined && URL.canParse(href.trim(), pageUrl) ? new URL(href.trim(), pageUrl).href : pageUrl;
}

/**
 * Candidates handed back at most. A few are tried; a page can name a million, and each one would
 * cost resolving here and copying into the thread that asked, for nothing.
 */
const MAX_CANDIDATES = 100;

/** Subtitle tracks handed back at most; a page offers a few languages, not hundreds. */
const MAX_SUBTITLES = 64;

/** `url` (already trimmed) resolved against `base`, without its fragment; null unless it is http(s) (no blob:, data:, javascript:). */
export function absoluteHttpUrl(url: string, base: string): string | null {
  if (!URL.canParse(url, base)) return null;
  const absolute = new URL(url, base);
  if (absolute.protocol !== 'http:' && absolute.protocol !== 'https:') return null;
  absolute.hash = '';
  return absolute.href;
}

/** Resolved, http(s) only, without fragments, first occurrence kept. */
function absoluteHttpUrls(urls: string[], base: string): string[] {
  const resolved = new Set<string>();
  // A URL a page repeats a million times is resolved once.
  const written = new Set<string>();
  for (const text of urls) {
    if (resolved.size === MAX_CANDIDATES) break;
    const url = text.trim();
    if (written.has(url)) continue;
    written.add(url);
    const absolute = absoluteHttpUrl(url, base);
    if (absolute !== null) resolved.add(absolute);
  }
  return [...resolved];
}

/** Resolved as candidates are, the first track of each URL kept (the reader already dropped repeats of a `src` as written). */
function subtitlesOf(tracks: TrackElement[], base: string): PageSubtitle[] {
  const subtitles = new Map<string, PageSubtitle>();
  for (const { src, srclang, label } of tracks) {
    if (subtitles.size === MAX_SUBTITLES) break;
    const url = absoluteHttpUrl(src, base);
    if (url === null || subtitles.has(url)) continue;
    subtitles.set(url, { url, language: trackLanguage(srclang), label: labelOf(label) });
  }
  return [...subtitles.values()];
}

function cleanTitle(text: string | undefined): string | null {
  return text?.replace(/\s+/g, ' ').trim() || null;
}

/**
 * The media URLs a web page offers, in the order worth trying: the page's own `<video>` elements,
 * then what it declares for sharing (Open Graph, Twitter, JSON-LD), then playlist URLs in its text.
 * `twitter:player` is left out: it names an HTML player page, not a stream. With them, the
 * subtitle and caption tracks of its `<video>` elements.
 */
export function findMediaInPage(input: { html: string; pageUrl: string }): PageMedia {
  const trackReader = videoTrackReader();
  const page = readPageParts(input.html, trackReader.visitor);
  const found = [
    ...page.mediaElements.flatMap((element) => (element.name === 'video' ? element.urls : [])),
    ...openGraphVideoUrls(page.metas),
    ...metaContents(page.metas, 'twitter:player:stream'),
    ...videoObjectUrls(page.jsonLd),
    ...manifestUrlsInText(input.html),
  ];
  // og:title, else the document's own title.
  const title = cleanTitle(metaContents(page.metas, 'og:title')[0]) ?? cleanTitle(page.title);
  const base = baseUrl(page.baseHref, input.pageUrl);
  return { candidates: absoluteHttpUrls(found, base), title, subtitles: subtitlesOf(trackReader.tracks, base) };
}

import { videoObjectUrls } from './json-ld.ts';
import { metaContents, openGraphVideoUrls } from './meta-tags.ts';
import { readPageParts } from './page-parts.ts';
import { manifestUrlsInText } from './stream-urls.ts';

export type PageMedia = {
  /** Absolute http(s) URLs, most trustworthy first, without duplicates; the first MAX_CANDIDATES. */
  candidates: string[];
  title: string | null;
};

/** The page URL, or the page's `<base href>` resolved against it. */
function baseUrl(href: string | undefined, pageUrl: string): string {
  return href !== undefined && URL.canParse(href.trim(), pageUrl) ? new URL(href.trim(), pageUrl).href : pageUrl;
}

/**
 * Candidates handed back at most. A few are tried; a page can name a million, and each one would
 * cost resolving here and copying into the thread that asked, for nothing.
 */
const MAX_CANDIDATES = 100;

/** Resolved, http(s) only (no blob:, data:, javascript:), without fragments, first occurrence kept. */
function absoluteHttpUrls(urls: string[], base: string): string[] {
  const resolved = new Set<string>();
  // A URL a page repeats a million times is resolved once.
  const written = new Set<string>();
  for (const text of urls) {
    if (resolved.size === MAX_CANDIDATES) break;
    const url = text.trim();
    if (written.has(url)) continue;
    written.add(url);
    if (!URL.canParse(url, base)) continue;
    const absolute = new URL(url, base);
    if (absolute.protocol !== 'http:' && absolute.protocol !== 'https:') continue;
    absolute.hash = '';
    resolved.add(absolute.href);
  }
  return [...resolved];
}

function cleanTitle(text: string | undefined): string | null {
  return text?.replace(/\s+/g, ' ').trim() || null;
}

/**
 * The media URLs a web page offers, in the order worth trying: the page's own `<video>` elements,
 * then what it declares for sharing (Open Graph, Twitter, JSON-LD), then playlist URLs in its text.
 * `twitter:player` is left out: it names an HTML player page, not a stream.
 */
export function findMediaInPage(input: { html: string; pageUrl: string }): PageMedia {
  const page = readPageParts(input.html);
  const found = [
    ...page.videoUrls,
    ...openGraphVideoUrls(page.metas),
    ...metaContents(page.metas, 'twitter:player:stream'),
    ...videoObjectUrls(page.jsonLd),
    ...manifestUrlsInText(input.html),
  ];
  // og:title, else the document's own title.
  const title = cleanTitle(metaContents(page.metas, 'og:title')[0]) ?? cleanTitle(page.title);
  return { candidates: absoluteHttpUrls(found, baseUrl(page.baseHref, input.pageUrl)), title };
}

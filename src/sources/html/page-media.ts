import { getAttributeValue, textContent } from 'domutils';
import { parseDocument } from 'htmlparser2';
import { elementsNamed, isInside, type HtmlDocument } from './dom.ts';
import { videoObjectUrls } from './json-ld.ts';
import { metaContents, metaTags, openGraphVideoUrls, type MetaTag } from './meta-tags.ts';
import { manifestUrlsInText } from './stream-urls.ts';

export type PageMedia = {
  /** Absolute http(s) URLs, most trustworthy first, without duplicates. */
  candidates: string[];
  title: string | null;
};

/** The page URL, or the page's `<base href>` resolved against it. */
function baseUrl(document: HtmlDocument, pageUrl: string): string {
  const href = elementsNamed(document, 'base').map((base) => getAttributeValue(base, 'href')).find((value) => value !== undefined);
  return href !== undefined && URL.canParse(href.trim(), pageUrl) ? new URL(href.trim(), pageUrl).href : pageUrl;
}

/** `<video src>` and the `<source src>` inside videos, in document order. */
function videoElementUrls(document: HtmlDocument): string[] {
  return elementsNamed(document, 'video', 'source')
    .filter((element) => element.name === 'video' || isInside(element, 'video'))
    .flatMap((element) => getAttributeValue(element, 'src') ?? []);
}

/** Resolved, http(s) only (no blob:, data:, javascript:), without fragments, first occurrence kept. */
function absoluteHttpUrls(urls: string[], base: string): string[] {
  const resolved = new Set<string>();
  for (const url of urls) {
    if (!URL.canParse(url.trim(), base)) continue;
    const absolute = new URL(url.trim(), base);
    if (absolute.protocol !== 'http:' && absolute.protocol !== 'https:') continue;
    absolute.hash = '';
    resolved.add(absolute.href);
  }
  return [...resolved];
}

function cleanTitle(text: string | undefined): string | null {
  return text?.replace(/\s+/g, ' ').trim() || null;
}

/** og:title, else the document's `<title>` (not an SVG's); entities are decoded by the parser. */
function pageTitle(document: HtmlDocument, metas: MetaTag[]): string | null {
  const titleElement = elementsNamed(document, 'title').find((element) => !isInside(element, 'svg'));
  return cleanTitle(metaContents(metas, 'og:title')[0]) ?? cleanTitle(titleElement && textContent(titleElement));
}

/**
 * The media URLs a web page offers, in the order worth trying: the page's own `<video>` elements,
 * then what it declares for sharing (Open Graph, Twitter, JSON-LD), then playlist URLs in its text.
 * `twitter:player` is left out: it names an HTML player page, not a stream.
 */
export function findMediaInPage(input: { html: string; pageUrl: string }): PageMedia {
  const document = parseDocument(input.html);
  const metas = metaTags(document);
  const found = [
    ...videoElementUrls(document),
    ...openGraphVideoUrls(metas),
    ...metaContents(metas, 'twitter:player:stream'),
    ...videoObjectUrls(document),
    ...manifestUrlsInText(input.html),
  ];
  return { candidates: absoluteHttpUrls(found, baseUrl(document, input.pageUrl)), title: pageTitle(document, metas) };
}

import { baseUrl, findMediaInPage } from '../html/page-media.ts';
import { readPageParts } from '../html/page-parts.ts';
import { entryText, entryUrl, type EntryList } from './entries.ts';

// A page's own `<video>` and `<audio>` elements, one entry each: its first URL that is usable, in
// the order the page reader tries them (page-parts.ts). The page is parsed by the linear-time walk
// (walk-html.ts) and was read whole within the page limit.

/** Adds each media element of the page to `entries`; the page's `<title>`. */
export function listPageMedia(html: string, pageUrl: string, entries: EntryList): { title: string | undefined } {
  const parts = readPageParts(html);
  const base = baseUrl(parts.baseHref, pageUrl);
  for (const element of parts.mediaElements) {
    if (entries.full) break;
    let url: string | null = null;
    for (const written of element.urls) if ((url = entryUrl(written, base)) !== null) break;
    entries.add({ url, title: entryText(element.title) ?? entryText(element.ariaLabel) });
  }
  return { title: parts.title };
}

/** What the page reader makes of the page: its title as a download of it would be named (og:title, else `<title>`), and whether it would find media. */
export function pageReading(html: string, pageUrl: string): { title: string | null; hasMedia: boolean } {
  const media = findMediaInPage({ html, pageUrl });
  return { title: media.title, hasMedia: media.candidates.length > 0 };
}

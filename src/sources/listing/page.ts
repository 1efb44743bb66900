import { baseUrl, findMediaInPage } from '../html/page-media.ts';
import { readPageParts } from '../html/page-parts.ts';
import { EntryList, entryText, entryUrl, type ListedEntry } from './entries.ts';

// A page's own `<video>` and `<audio>` elements, one entry each: its first URL that is usable, in
// the order the page reader tries them (page-parts.ts). This runs in the sandbox's thread (its page
// request, sandbox/worker.ts): a hostile page costs that thread its time and heap, not the API's loop.

/** What the page reader makes of a page: its title as a download of it would be named (og:title, else `<title>`), and whether it would find media. */
export type PageReading = { title: string | null; hasMedia: boolean };

/**
 * A page as a collection lists it: its `<title>`, its media elements as entries (one past the
 * limit at most), and, when they are fewer than two (no list of its own), the page reader's reading
 * of it for the listing's fallback.
 */
export type ListedPage = { title: string | null; entries: ListedEntry[]; reading: PageReading | null };

/** `limit`: the collection's; the sandbox's page request calls this when it is given one. */
export function listPage(html: string, pageUrl: string, limit: number): ListedPage {
  const parts = readPageParts(html);
  const base = baseUrl(parts.baseHref, pageUrl);
  const entries = new EntryList(limit);
  for (const element of parts.mediaElements) {
    if (entries.full) break;
    let url: string | null = null;
    for (const written of element.urls) if ((url = entryUrl(written, base)) !== null) break;
    entries.add({ url, title: entryText(element.title) ?? entryText(element.ariaLabel) });
  }
  // The title bounded here, so that a megabyte of it does not cross back.
  return { title: entryText(parts.title), entries: entries.all(), reading: entries.size >= 2 ? null : pageReading(html, pageUrl) };
}

function pageReading(html: string, pageUrl: string): PageReading {
  const media = findMediaInPage({ html, pageUrl });
  return { title: media.title, hasMedia: media.candidates.length > 0 };
}

import { labelOf } from '../../core/text.ts';
import { absoluteHttpUrl } from '../html/page-media.ts';

// The rules every listing's entries follow, whatever found them: http(s) URLs of a bounded length,
// each once, in the source's order; ids and titles as labels; no more kept than one past the limit.

/**
 * `extractor`: the yt-dlp extractor that would read the entry, where yt-dlp listed it (its archive
 * key is this, lowercased, and the id). `upcoming`: a live not yet started, nothing to download yet.
 */
export type ListedEntry = {
  id: string | null;
  url: string;
  title: string | null;
  durationSeconds: number | null;
  extractor: string | null;
  upcoming: boolean;
};

/** `extractor`: how the entries were found: 'feed', 'page', 'direct', 'hls', 'dash', or yt-dlp's extractor key. */
export type Listing = { title: string | null; extractor: string; entries: ListedEntry[]; truncated: boolean };

/** The longest entry URL kept: no honest media URL needs more, and each becomes a download's. */
export const MAX_ENTRY_URL_CHARS = 2048;
/** An entry's id, an entry's title and a listing's title, at most, in code points. */
export const MAX_ENTRY_TEXT_CHARS = 500;
/**
 * An extractor's name, at most (yt-dlp's are a few ASCII letters): with an id, it keys an entry a
 * subscription saw, at most 2,401 bytes of UTF-8 with the longest id, within what PostgreSQL indexes.
 */
export const MAX_EXTRACTOR_CHARS = 100;

/** `text` resolved against `base` as a page's media URL is (http(s) only, no fragment); null when it is none or too long. */
export function entryUrl(text: string, base: string): string | null {
  // A megabyte of attribute is not resolved to find out that it is too long.
  if (text.length > 4 * MAX_ENTRY_URL_CHARS) return null;
  const url = absoluteHttpUrl(text.trim(), base);
  return url !== null && url.length <= MAX_ENTRY_URL_CHARS ? url : null;
}

/** A source's id or title as an entry keeps it. */
export function entryText(text: string | null | undefined): string | null {
  return labelOf(text, MAX_ENTRY_TEXT_CHARS);
}

/** A duration a source states, in seconds, when it is one. */
function seconds(value: number | null | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}

/** The entries found so far: each URL once, in the order found, at most one past the limit (which tells that there were more). */
export class EntryList {
  private readonly byUrl = new Map<string, ListedEntry>();

  constructor(private readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`A listing's limit is a positive integer, not ${limit}.`);
  }

  /** Whether one more than the limit is known: the listing is truncated, and nothing more is wanted. */
  get full(): boolean {
    return this.byUrl.size > this.limit;
  }

  get size(): number {
    return this.byUrl.size;
  }

  /** Keeps an entry whose URL (already through `entryUrl`) is new; ignores it when there is none or the list is full. */
  add(entry: {
    url: string | null;
    id?: string | null;
    title?: string | null;
    durationSeconds?: number | null;
    extractor?: string | null;
    upcoming?: boolean;
  }): void {
    if (entry.url === null || this.full || this.byUrl.has(entry.url)) return;
    this.byUrl.set(entry.url, {
      id: entryText(entry.id),
      url: entry.url,
      title: entryText(entry.title),
      durationSeconds: seconds(entry.durationSeconds),
      extractor: labelOf(entry.extractor, MAX_EXTRACTOR_CHARS),
      upcoming: entry.upcoming ?? false,
    });
  }

  /** Every entry kept, one past the limit at most: a list made in the sandbox's thread crosses as these. */
  all(): ListedEntry[] {
    return [...this.byUrl.values()];
  }

  /** The listing: the first `limit` entries; truncated when more were known, or when `more` says the source held more than was read. */
  listing(title: string | null | undefined, extractor: string, more = false): Listing {
    const entries = this.all();
    return { title: entryText(title), extractor, entries: entries.slice(0, this.limit), truncated: more || entries.length > this.limit };
  }
}

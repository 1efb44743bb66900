import type { ListedEntry, Listing } from '../sources/listing/index.ts';
import type { SeenEntry } from './repository.ts';

// Which of a listing's entries a check records as seen, and which it would download if new. Every
// entry listed is recorded, whatever the filter, so that changing the filter later takes only what
// appears after it; a live that has not started is neither (it is taken once it has).

/** An entry's key: `<extractor> <id>` as yt-dlp's download archive writes it, else its URL. */
export function seenEntryOf(entry: ListedEntry, listing: Pick<Listing, 'extractor'>): SeenEntry {
  if (entry.id === null) return { key: entry.url, archived: false };
  return { key: `${(entry.extractor ?? listing.extractor).toLowerCase()} ${entry.id}`, archived: true };
}

/** Whether an entry's title holds `titleContains`, ignoring case; every entry does when there is no filter. */
export function titleMatches(entry: Pick<ListedEntry, 'title'>, titleContains: string | null): boolean {
  if (titleContains === null) return true;
  return (entry.title ?? '').toLowerCase().includes(titleContains.toLowerCase());
}

export type PlannedEntry = { entry: ListedEntry; seen: SeenEntry; wanted: boolean };

/**
 * The entries of a listing a check records, in the source's order (newest first). On the first
 * reading only the newest `backfill` that pass the filter are wanted; later, every one that does.
 */
export function planEntries(listing: Listing, options: { titleContains: string | null; firstReading: boolean; backfill: number }): PlannedEntry[] {
  let wantedLeft = options.firstReading ? options.backfill : Infinity;
  const keys = new Set<string>();
  return listing.entries
    .filter((entry) => !entry.upcoming)
    .flatMap((entry) => {
      const seen = seenEntryOf(entry, listing);
      // A source listing one id twice (a feed repeating a guid) has one entry of it: the first, the newest.
      if (keys.has(seen.key)) return [];
      keys.add(seen.key);
      const wanted = wantedLeft > 0 && titleMatches(entry, options.titleContains);
      if (wanted) wantedLeft -= 1;
      return [{ entry, seen, wanted }];
    });
}

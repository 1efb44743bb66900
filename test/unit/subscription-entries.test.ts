import type { ListedEntry, Listing } from '../../src/sources/listing/index.ts';
import { planEntries, seenEntryOf, titleMatches } from '../../src/subscriptions/entries.ts';

// Which entries of a listing a subscription's check records as seen, by which key, and which it
// downloads: on the first reading only the newest `backfill` that pass the filter, later every one
// that does; a live not yet started is neither.

function entry(id: string | null, title: string | null, more: Partial<ListedEntry> = {}): ListedEntry {
  return { id, url: `https://media.example/${id ?? 'anonymous'}.mp4`, title, durationSeconds: null, extractor: null, upcoming: false, ...more };
}

function listing(entries: ListedEntry[], extractor = 'feed'): Listing {
  return { title: 'A feed', extractor, entries, truncated: false };
}

const wantedIds = (planned: ReturnType<typeof planEntries>) => planned.filter((one) => one.wanted).map((one) => one.entry.id);

describe('keys', () => {
  test("when an entry has an id, then its key is the listing's extractor in lower case and the id, an archive line", () => {
    expect(seenEntryOf(entry('ep-1', 'One'), listing([], 'Feed'))).toEqual({ key: 'feed ep-1', archived: true });
  });

  test("when yt-dlp named the entry's own extractor, then that one is the key's, lower-cased, whatever the listing's", () => {
    expect(seenEntryOf(entry('dQw4w9WgXcQ', 'A video', { extractor: 'Youtube' }), listing([], 'YoutubeTab'))).toEqual({
      key: 'youtube dQw4w9WgXcQ',
      archived: true,
    });
  });

  test('when an entry has no id, then its key is its URL and it is not an archive line', () => {
    const anonymous = entry(null, 'A clip', { url: 'https://media.example/page/clip.mp4' });
    expect(seenEntryOf(anonymous, listing([], 'page'))).toEqual({ key: 'https://media.example/page/clip.mp4', archived: false });
  });

  test('when an id keeps its case and inner spaces, then the key keeps them too', () => {
    expect(seenEntryOf(entry('Ep 7 Final', null), listing([])).key).toBe('feed Ep 7 Final');
  });
});

describe('the title filter', () => {
  test('when there is no filter, then every entry passes, also one without a title', () => {
    expect(titleMatches({ title: 'Anything' }, null)).toBe(true);
    expect(titleMatches({ title: null }, null)).toBe(true);
  });

  test('when the text is in the title in another case, then it passes; when it is not there, then it does not', () => {
    expect(titleMatches({ title: 'The LIVE show, part 2' }, 'live')).toBe(true);
    expect(titleMatches({ title: 'the live show' }, 'LIVE Show')).toBe(true);
    expect(titleMatches({ title: 'A recorded show' }, 'live')).toBe(false);
  });

  test('when an entry has no title, then a filter never passes it', () => {
    expect(titleMatches({ title: null }, 'live')).toBe(false);
  });

  test('when the text holds characters a pattern would read, then it is a plain substring', () => {
    expect(titleMatches({ title: 'Episode (1) .* special' }, '(1) .*')).toBe(true);
    expect(titleMatches({ title: 'Episode 1 special' }, '.*')).toBe(false);
  });
});

describe('the plan', () => {
  const five = listing(['e5', 'e4', 'e3', 'e2', 'e1'].map((id) => entry(id, `Episode ${id}`)));

  test('when it is the first reading with backfill 0, then every entry is recorded as seen and none is wanted', () => {
    const planned = planEntries(five, { titleContains: null, firstReading: true, backfill: 0 });
    expect(planned.map((one) => one.seen.key)).toEqual(['feed e5', 'feed e4', 'feed e3', 'feed e2', 'feed e1']);
    expect(wantedIds(planned)).toEqual([]);
  });

  test('when it is the first reading with backfill 2, then the two newest (first listed) are wanted', () => {
    expect(wantedIds(planEntries(five, { titleContains: null, firstReading: true, backfill: 2 }))).toEqual(['e5', 'e4']);
  });

  test('when the backfill is more than the listing holds, then every entry is wanted', () => {
    expect(wantedIds(planEntries(five, { titleContains: null, firstReading: true, backfill: 50 }))).toEqual(['e5', 'e4', 'e3', 'e2', 'e1']);
  });

  test('when the first reading has a filter, then the backfill counts only the entries that pass it, and all are still seen', () => {
    const mixed = listing([entry('a', 'Live one'), entry('b', 'Talk'), entry('c', 'live two'), entry('d', 'LIVE three'), entry('e', 'Talk')]);
    const planned = planEntries(mixed, { titleContains: 'live', firstReading: true, backfill: 2 });
    expect(wantedIds(planned)).toEqual(['a', 'c']);
    expect(planned).toHaveLength(5);
  });

  test('when it is a later reading, then every entry that passes the filter is wanted, whatever the backfill', () => {
    expect(wantedIds(planEntries(five, { titleContains: null, firstReading: false, backfill: 0 }))).toHaveLength(5);
    const mixed = listing([entry('a', 'Live one'), entry('b', 'Talk')]);
    expect(wantedIds(planEntries(mixed, { titleContains: 'LIVE', firstReading: false, backfill: 1 }))).toEqual(['a']);
  });

  test('when a live has not started, then it is neither seen nor wanted, and does not use up the backfill', () => {
    const withUpcoming = listing([entry('soon', 'Premiere', { upcoming: true }), entry('e2', 'Two'), entry('e1', 'One')]);
    const planned = planEntries(withUpcoming, { titleContains: null, firstReading: true, backfill: 1 });
    expect(planned.map((one) => one.seen.key)).toEqual(['feed e2', 'feed e1']);
    expect(wantedIds(planned)).toEqual(['e2']);
    expect(planEntries(withUpcoming, { titleContains: null, firstReading: false, backfill: 0 }).map((one) => one.entry.id)).toEqual(['e2', 'e1']);
  });

  test('when the source lists one id twice (a feed repeating a guid), then it is one entry, the first listed (newest), and counts once against the backfill', () => {
    const repeated = listing([
      entry('ep', 'New', { url: 'https://media.example/ep-new.mp4' }),
      entry('ep', 'Old', { url: 'https://media.example/ep-old.mp4' }),
      entry('other', 'Other'),
    ]);
    const planned = planEntries(repeated, { titleContains: null, firstReading: true, backfill: 2 });
    expect(planned.map((one) => [one.seen.key, one.entry.url, one.wanted])).toEqual([
      ['feed ep', 'https://media.example/ep-new.mp4', true],
      ['feed other', 'https://media.example/other.mp4', true],
    ]);
  });

  test('when the listing is empty, then the plan is empty', () => {
    expect(planEntries(listing([]), { titleContains: null, firstReading: true, backfill: 3 })).toEqual([]);
  });
});

import { z } from 'zod';
import { DownloadError } from '../../core/errors.ts';

// What yt-dlp answers to `--flat-playlist -J`: a playlist whose entries it has not looked into (a
// channel's videos as links, a feed's items, a page's embeds), or the one video at the URL. Only
// the fields a listing uses are checked; an entry that does not fit is skipped, not the answer.

const text = z.string().nullish();
/** Sites give ids as strings; a number is taken as its digits. */
const id = z.union([z.string(), z.number().transform(String)]).nullish();

const flatEntrySchema = z.object({
  _type: text,
  id,
  url: text,
  webpage_url: text,
  original_url: text,
  title: text,
  duration: z.number().nullish(),
  ie_key: text,
  live_status: text,
});

const tolerantEntries = z.array(z.unknown()).transform((items) =>
  items.flatMap((item) => {
    const parsed = flatEntrySchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  }),
);

const flatPlaylistSchema = z.object({
  _type: z.literal('playlist'),
  extractor_key: text,
  extractor: text,
  title: text,
  /** How many entries the playlist holds, when the site says (more than were listed, past `--playlist-end`). */
  playlist_count: z.number().nullish(),
  entries: tolerantEntries.nullish(),
});

const videoSchema = z.object({ _type: text, extractor_key: text, extractor: text, title: text });

export type FlatEntry = z.infer<typeof flatEntrySchema>;

export type FlatListing =
  | { kind: 'playlist'; extractor: string | null; title: string | null; count: number | null; entries: FlatEntry[] }
  | { kind: 'video'; extractor: string | null; title: string | null };

/** yt-dlp's flat description as the service reads it: a playlist and its entries, or one video. */
export function flatListingOf(json: unknown): FlatListing {
  const playlist = flatPlaylistSchema.safeParse(json);
  if (playlist.success) {
    const { extractor_key, extractor, title, playlist_count, entries } = playlist.data;
    return { kind: 'playlist', extractor: extractor_key ?? extractor ?? null, title: title ?? null, count: playlist_count ?? null, entries: entries ?? [] };
  }
  const video = videoSchema.safeParse(json);
  if (!video.success || video.data._type === 'playlist') throw new DownloadError('unsupported_source', 'yt-dlp did not answer with a description of the page.');
  return { kind: 'video', extractor: video.data.extractor_key ?? video.data.extractor ?? null, title: video.data.title ?? null };
}

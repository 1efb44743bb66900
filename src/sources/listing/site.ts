import { labelOf } from '../../core/text.ts';
import type { SiteReaderDeps } from '../readers/site.ts';
import type { FlatEntry } from '../site/flat-playlist.ts';
import { extractFlatPlaylist } from '../site/ytdlp.ts';
import { entryUrl, type EntryList } from './entries.ts';

// A URL listed by yt-dlp (`--flat-playlist`), confined as every extraction is: through the service's
// proxy, which holds it to the address policy, with a pass of its own, a time limit and a bound on
// its output. Every extractor may answer: a site's own for its playlists and channels, the generic
// one for feeds and pages of embeds.

export type SiteListing =
  { kind: 'playlist'; title: string | null; extractor: string; more: boolean } | { kind: 'video'; title: string | null; extractor: string };

/** An entry's own http(s) URL: `url` when it is one, else the page it is on; never an extractor's internal form. */
function ownUrl(entry: FlatEntry): string | null {
  for (const candidate of [entry.url, entry.webpage_url, entry.original_url]) {
    if (candidate && /^https?:\/\//i.test(candidate.trim())) return entryUrl(candidate, candidate.trim());
  }
  return null;
}

/** What yt-dlp finds at `url`: a playlist, whose entries are added to `entries`, or one video. */
export async function listWithSite(site: SiteReaderDeps, url: string, entries: EntryList, limit: number, signal: AbortSignal): Promise<SiteListing> {
  const pass = site.proxy.open();
  const found = await extractFlatPlaylist(site.ytdlp, {
    url,
    proxyUrl: pass.url,
    extractors: 'all',
    timeoutMs: site.timeoutMs,
    signal,
    refusedHosts: () => pass.refused,
    exceeded: () => pass.exceeded(),
    revoke: () => pass.revoke(),
    // One past the limit tells whether there were more.
    maxEntries: limit + 1,
  });
  const extractor = labelOf(found.extractor) ?? 'site';
  if (found.kind === 'video') return { kind: 'video', title: found.title, extractor };
  for (const entry of found.entries) {
    // A nested playlist (a channel's tabs) is no video to download.
    if (entry._type === 'playlist') continue;
    entries.add({
      url: ownUrl(entry),
      id: entry.id,
      title: entry.title,
      durationSeconds: entry.duration,
      extractor: entry.ie_key,
      upcoming: entry.live_status === 'is_upcoming',
    });
  }
  return { kind: 'playlist', title: found.title, extractor, more: (found.count ?? 0) > limit };
}

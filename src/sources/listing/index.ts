import { DownloadError } from '../../core/errors.ts';
import { discard, transportError, type SourceHttp } from '../../net/guarded-client.ts';
import { arrive } from '../arrival.ts';
import { isFeed } from '../detect.ts';
import { readDocument } from '../document-limits.ts';
import type { SiteReaderDeps } from '../readers/site.ts';
import type { DocumentSandbox } from '../sandbox/document-sandbox.ts';
import { EntryList, entryUrl, MAX_ENTRY_URL_CHARS, type Listing } from './entries.ts';
import { readFeed } from './feed.ts';
import type { PageReading } from './page.ts';
import { listWithSite } from './site.ts';

// The expansion of a collection (DESIGN.md 1i): what a URL holds, as a list of entries that each
// become an ordinary download. The URL is asked for once, as a download's is; what answers decides
// how it is listed: a media file or a stream is one entry, a feed its items with media, a page its
// several media elements, and anything else (a page of fewer than two) is yt-dlp's to list.

export type { ListedEntry, Listing } from './entries.ts';

/**
 * `site`: null when there is no yt-dlp, or YTDLP=off. `sandbox`: where pages are parsed, off the
 * thread that serves the API. `readTimeoutMs`: the longest the service's own reading of the URL
 * (its answer, a feed, a page) may take; yt-dlp's turn has its own limit.
 */
export type ListingDeps = { http: SourceHttp; site: SiteReaderDeps | null; sandbox: DocumentSandbox; readTimeoutMs: number };

/**
 * A source that keeps sending just above the speed floor (a feed of items without media) would
 * otherwise hold a preview or an expansion until its byte limit, an hour away.
 */
export const LISTING_READ_TIMEOUT_MS = 120_000;

export type ListOptions = {
  limit: number;
  signal: AbortSignal;
  /**
   * A feed read whole with no item with media is an empty listing rather than `unsupported_source`:
   * for a subscription, whose feed has nothing yet (a new podcast), not for a collection.
   */
  feedMayBeEmpty?: boolean;
  /** The longest the service's own reading may take, when shorter than `ListingDeps.readTimeoutMs`. */
  readTimeoutMs?: number;
};

/** At most `limit` entries, in the source's order, each URL once; `truncated` when the source held more. Throws DownloadError (src/core/errors.ts) with the codes downloads use when nothing can be listed. */
export async function listEntries(deps: ListingDeps, url: string, options: ListOptions): Promise<Listing> {
  // The deadline is the abort's reason, so that every read it cuts fails with it (transportError).
  const deadline = new AbortController();
  const timeoutMs = Math.min(options.readTimeoutMs ?? Infinity, deps.readTimeoutMs);
  const timer = setTimeout(
    () => deadline.abort(new DownloadError('source_timeout', `Reading ${url} took longer than ${timeoutMs / 1000} s.`, true)),
    timeoutMs,
  );
  let read: Listing | PageReading | null;
  try {
    read = await readOwn(deps, url, { ...options, signal: AbortSignal.any([options.signal, deadline.signal]) });
  } finally {
    clearTimeout(timer);
  }
  return read !== null && 'entries' in read ? read : listBeyondPage(deps, url, read, options);
}

/** The service's own reading: the listing, when the answer is one it lists; else what the page it read holds, if any, for yt-dlp's turn. */
async function readOwn(deps: ListingDeps, url: string, options: ListOptions): Promise<Listing | PageReading | null> {
  const { limit, signal } = options;
  const entries = new EntryList(limit);
  // A failure while its first KiB arrives is a transport failure as any other, or the cancel.
  const arrival = await arrive({ http: deps.http, signal }, url).catch((error: unknown) => {
    throw transportError(error, signal);
  });
  const { response, detected } = arrival;
  try {
    if (detected === 'direct' || detected === 'hls' || detected === 'dash') return single(url, null, detected);
    if (isFeed({ contentType: response.headers['content-type'] ?? null, head: arrival.head })) {
      const feed = await readFeed(response, entries, signal, options.feedMayBeEmpty ?? false);
      return entries.listing(feed.title, 'feed', feed.more);
    }
    if (detected !== 'page') return null;
    const bytes = await readDocument(response, 'page', signal);
    const listed = await deps.sandbox.listedPage({ bytes, pageUrl: response.url, listLimit: limit }, signal);
    // No reading: the page's media elements are its list.
    if (listed.reading) return listed.reading;
    for (const entry of listed.entries) entries.add(entry);
    return entries.listing(listed.title, 'page');
  } finally {
    discard(response);
  }
}

/**
 * A page of fewer than two media elements, or an answer the service cannot read itself: yt-dlp's
 * playlist, else the URL as one entry when yt-dlp finds one video there or the page reader would
 * find media in it (the download then reads the page itself).
 */
async function listBeyondPage(deps: ListingDeps, url: string, own: PageReading | null, options: ListOptions): Promise<Listing> {
  let failure: DownloadError | null = null;
  if (deps.site) {
    const entries = new EntryList(options.limit);
    try {
      const found = await listWithSite(deps.site, url, entries, options.limit, options.signal);
      if (found.kind === 'video') return single(url, own?.title ?? found.title, found.extractor);
      if (entries.size > 0) return entries.listing(found.title, found.extractor, found.more);
      failure = new DownloadError('unsupported_source', `yt-dlp found a playlist at ${url}, but no entry of it has a web address.`);
    } catch (error) {
      // The page's own media still make it one download; anything else (a cancel, a shutdown) ends here.
      if (options.signal.aborted || !(error instanceof DownloadError)) throw error;
      failure = error;
    }
  }
  if (own?.hasMedia) return single(url, own.title, 'page');
  throw (
    failure ??
    new DownloadError(
      'unsupported_source',
      `No video or audio was found at ${url}. If it is a video site's page, installing yt-dlp on the server enables extraction from sites.`,
    )
  );
}

/** The URL itself as the one entry: a file, a stream, or a page of one video that its download reads. */
function single(url: string, title: string | null | undefined, extractor: string): Listing {
  const entries = new EntryList(1);
  const address = entryUrl(url, url);
  if (address === null) throw new DownloadError('unsupported_source', `The URL is longer than the ${MAX_ENTRY_URL_CHARS} characters an entry may have.`);
  entries.add({ url: address, title });
  return entries.listing(title, extractor);
}

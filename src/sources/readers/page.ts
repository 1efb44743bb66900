import { DownloadError } from '../../core/errors.ts';
import { arrive } from '../arrival.ts';
import { dispatch } from '../dispatch.ts';
import { readDocument } from '../document-limits.ts';
import { NothingFound, type Arrival, type FetchedMedia, type MediaContext, type SourceReader } from '../reader.ts';

/** Candidates of a page tried before giving up: the first usually works, the rest are fallbacks. */
const MAX_PAGE_CANDIDATES = 5;

/**
 * A page that embeds its media (a video tag, a player's metadata, JSON-LD): searched in the sandbox
 * for media URLs, each then read by `within` (the readers of files and streams, never of pages).
 */
export class PageReader implements SourceReader {
  readonly kind = 'page';

  constructor(private readonly within: readonly SourceReader[]) {}

  takes(arrival: Arrival): boolean {
    return arrival.detected === 'page';
  }

  async read(ctx: MediaContext, arrival: Arrival): Promise<FetchedMedia> {
    const pageUrl = arrival.response.url;
    const bytes = await readDocument(arrival.response, 'page', ctx.signal);
    const { candidates, title, subtitles } = await ctx.sandbox.page({ bytes, pageUrl }, ctx.signal);
    let lastError: DownloadError | undefined;
    for (const candidate of candidates.slice(0, MAX_PAGE_CANDIDATES)) {
      // The candidate is the download's source now; what it is does not change what the download is.
      const target: MediaContext = { ...ctx, url: candidate, found: () => {} };
      try {
        const media = await dispatch(target, await arrive(target, candidate), this.within);
        ctx.found({ kind: 'page', extractor: null, title });
        const offered = subtitles.map((track) => ({ ...track, format: 'file' as const }));
        return { ...media, title: title ?? media.title, source: 'page', subtitles: [...(media.subtitles ?? []), ...offered] };
      } catch (error) {
        // A dead or unusable candidate gives way to the next; anything else (a stall, a full disk,
        // a shutdown) is the download's own problem and ends it here.
        if (!(error instanceof DownloadError) || !isCandidateFailure(error)) throw error;
        lastError = error;
      }
    }
    // Candidates that were no media are nothing found, as no candidates are; a dead one's error stands.
    if (lastError && lastError.code !== 'unsupported_source') throw lastError;
    throw new NothingFound(lastError?.message ?? `No video was found in the page at ${pageUrl}.`);
  }
}

function isCandidateFailure(error: DownloadError): boolean {
  return error.code === 'unsupported_source' || (error.code === 'source_http_error' && !error.retryable);
}

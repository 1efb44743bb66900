import { DownloadError } from '../core/errors.ts';
import { discard } from '../net/guarded-client.ts';
import { arrive } from './arrival.ts';
import { NothingFound, type Arrival, type FetchedMedia, type MediaContext, type SourceReader } from './reader.ts';

/** What the first reader that has kept bytes of the download resumes; otherwise `dispatch` of the URL's first answer. */
export async function resumeOrDispatch(ctx: MediaContext, readers: readonly SourceReader[]): Promise<FetchedMedia> {
  for (const reader of readers) {
    const resumed = await reader.resume?.(ctx);
    if (resumed) return resumed;
  }
  return dispatch(ctx, await arrive(ctx, ctx.url), readers);
}

/**
 * Reads the arrival with the first reader in `readers` that takes it. A reader that finds nothing
 * (NothingFound) gives way to the next that takes it (a page with no media of its own, to
 * an extractor); any other failure is the download's and ends it here.
 */
export async function dispatch(ctx: MediaContext, arrival: Arrival, readers: readonly SourceReader[]): Promise<FetchedMedia> {
  let nothing: NothingFound | undefined;
  try {
    for (const reader of readers) {
      if (!reader.takes(arrival)) continue;
      ctx.found({ kind: reader.kind, extractor: null, title: null });
      try {
        return await reader.read(ctx, arrival);
      } catch (error) {
        if (!(error instanceof NothingFound)) throw error;
        nothing = error;
      }
    }
  } finally {
    // Whatever was not read of the first answer is not wanted any more.
    discard(arrival.response);
  }
  throw nothing ?? new DownloadError('unsupported_source', `No video or audio was found at ${arrival.url}.`);
}

import { transportError } from '../net/guarded-client.ts';
import { arrive } from './arrival.ts';
import { resumableDirect } from './direct/resume.ts';
import { dispatch } from './dispatch.ts';
import type { FetchedMedia, MediaContext, SourceReader } from './reader.ts';
import { readDirect } from './readers/direct.ts';
import { shapeToMode } from './shape.ts';
import { withSubtitles } from './subtitles.ts';

// Any URL a client posts: what it is (a file, an HLS or DASH manifest, a page, a site's page) is
// decided from the response itself, its first bytes before its declared type, by the first of the
// readers that takes it.

export async function fetchMedia(ctx: MediaContext, readers: readonly SourceReader[]): Promise<FetchedMedia> {
  try {
    // Bytes left by an earlier attempt are resumed at once, without asking what the URL is again.
    const resumable = await resumableDirect(ctx);
    const fetched = resumable ? await readDirect({ ...ctx, url: resumable }) : await dispatch(ctx, await arrive(ctx, ctx.url), readers);
    return await withSubtitles(ctx, await shapeToMode(ctx, fetched));
  } catch (error) {
    // The readers that retry on their own classify their failures where they happen; a connection
    // failure that reaches here unclassified (the first KiB, read to tell what the URL is, say) is
    // still the contract's code, not an internal error.
    throw transportError(error, ctx.signal);
  }
}

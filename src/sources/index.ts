import { transportError } from '../net/guarded-client.ts';
import { cutToClip } from './apply-clip.ts';
import { shapeToMode } from './apply-mode.ts';
import { resumeOrDispatch } from './dispatch.ts';
import type { FetchedMedia, MediaContext, SourceReader } from './reader.ts';
import { withSubtitles } from './subtitles.ts';

// Any URL a client posts: what it is (a file, an HLS or DASH manifest, a page, a site's page) is
// decided from the response itself, its first bytes before its declared type, by the first of the
// readers that takes it; bytes an earlier attempt kept are resumed by their reader before that.

export async function fetchMedia(ctx: MediaContext, readers: readonly SourceReader[]): Promise<FetchedMedia> {
  try {
    const fetched = await resumeOrDispatch(ctx, readers);
    return await withSubtitles(ctx, await shapeToMode(ctx, await cutToClip(ctx, fetched)));
  } catch (error) {
    // The readers that retry on their own classify their failures where they happen; a connection
    // failure that reaches here unclassified (the first KiB, read to tell what the URL is, say) is
    // still the contract's code, not an internal error.
    throw transportError(error, ctx.signal);
  }
}

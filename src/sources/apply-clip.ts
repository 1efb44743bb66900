import { cutClip } from '../media/cut.ts';
import { keptStartSeconds } from '../media/kept-start.ts';
import { remadeAs } from './apply-mode.ts';
import type { FetchedMedia, MediaContext } from './reader.ts';

/**
 * The fetched file cut to the clip asked for, if one was and its reader did not fetch only the
 * clip's part already; the cut comes before the mode, so that an audio re-encode only pays for
 * what is kept.
 */
export async function cutToClip(ctx: MediaContext, media: FetchedMedia): Promise<FetchedMedia> {
  if (!ctx.clip || media.keptFromSeconds !== undefined) return media;
  const source = { ffmpeg: ctx.ffmpeg, input: media.path, signal: ctx.signal, declaredType: media.mime };
  const file = await cutClip({
    ...source,
    output: `${media.path}.clip`,
    clip: ctx.clip,
    maxBytes: ctx.maxFileBytes,
    durationSeconds: media.durationSeconds,
  });
  const keptFromSeconds = await keptStartSeconds({ ...source, startSeconds: ctx.clip.startSeconds });
  return { ...(await remadeAs(ctx, media, file)), keptFromSeconds };
}

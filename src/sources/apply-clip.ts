import { cutClip } from '../media/cut.ts';
import { remadeAs } from './apply-mode.ts';
import type { FetchedMedia, MediaContext } from './reader.ts';

/**
 * The fetched file cut to the clip asked for, if one was and its reader did not fetch only the
 * clip's part already; the cut comes before the mode, so that an audio re-encode only pays for
 * what is kept.
 */
export async function cutToClip(ctx: MediaContext, media: FetchedMedia): Promise<FetchedMedia> {
  if (!ctx.clip || media.keptFromSeconds !== undefined) return media;
  const file = await cutClip({
    ffmpeg: ctx.ffmpeg,
    input: media.path,
    output: `${media.path}.clip`,
    clip: ctx.clip,
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
    declaredType: media.mime,
    durationSeconds: media.durationSeconds,
  });
  return { ...(await remadeAs(ctx, media, file)), keptFromSeconds: file.keptFromSeconds };
}

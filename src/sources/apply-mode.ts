import { extractAudio } from '../media/audio-only.ts';
import { describe } from '../media/describe.ts';
import { muteVideo } from '../media/mute.ts';
import type { RemuxedFile } from '../media/output-file.ts';
import type { FetchedMedia, MediaContext } from './reader.ts';

/**
 * The fetched file made into what the download asked for: its sound alone (copied, or re-encoded
 * only for an audio format of another codec), or its picture alone. What the readers could leave
 * out (a separate video or audio track) they never fetched; this drops what came muxed.
 */
export async function shapeToMode(ctx: MediaContext, media: FetchedMedia): Promise<FetchedMedia> {
  if (ctx.mode === 'video') return media;
  const job = {
    ffmpeg: ctx.ffmpeg,
    input: media.path,
    output: `${media.path}.${ctx.mode}`,
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
    declaredType: media.mime,
  };
  const shaped = ctx.mode === 'audio' ? await extractAudio({ ...job, format: ctx.audioFormat ?? 'best' }) : await muteVideo(job);
  return remadeAs(ctx, media, shaped);
}

/** `media` as ffmpeg made it again into `file` (its mode, its subtitles): described anew, all else kept. */
export async function remadeAs(ctx: MediaContext, media: FetchedMedia, file: RemuxedFile): Promise<FetchedMedia> {
  ctx.phaseEnded('remux');
  const described = await describe(file, ctx.signal);
  ctx.phaseEnded('probe');
  return { ...media, ...described, declaredType: described.mime };
}

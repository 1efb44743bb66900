import { DownloadError } from '../../core/errors.ts';
import { detectContainer } from '../../media/detect-container.ts';
import { MPEG_TS } from '../../media/containers.ts';
import { describe } from '../../media/describe.ts';
import { probe } from '../../media/probe.ts';
import { remux } from '../../media/remux.ts';
import type { SourceResponse } from '../../net/guarded-client.ts';
import { fetchDirect } from '../direct/index.ts';
import { resumableDirect } from '../direct/resume.ts';
import type { Arrival, FetchedMedia, MediaContext, SourceReader } from '../reader.ts';

// A URL that is the media file itself: fetched (or resumed) to disk, then checked to hold audio
// or video; a transport stream is remuxed into MP4, which plays in more places.

export const directReader: SourceReader = {
  kind: 'direct',
  takes: (arrival: Arrival) => arrival.detected === 'direct',
  read(ctx: MediaContext, arrival: Arrival) {
    ctx.phaseEnded('resolve');
    return readDirect(ctx, arrival.response);
  },
  // Bytes an earlier attempt kept are of the file itself, wherever the URL led to it (a page's
  // candidate, a site's format): resumed from that file's URL at once.
  async resume(ctx: MediaContext) {
    const url = await resumableDirect(ctx);
    return url ? readDirect({ ...ctx, url }) : null;
  },
};

/** Fetches ctx.url as a file; `opened` is its answer when the caller has one, else it is asked for (or resumed). */
export async function readDirect(ctx: MediaContext, opened?: SourceResponse): Promise<FetchedMedia> {
  const fetched = await fetchDirect(ctx, opened);
  await ctx.processing();
  const container = await detectContainer(fetched.path, fetched.declaredType);
  if (!container) throw new DownloadError('unsupported_source', `No video or audio was found at ${ctx.url}.`);
  if (container === MPEG_TS) {
    // A transport stream plays in few places as a file; its H.264/AAC go into MP4 as they are.
    const remuxed = await remux({
      ffmpeg: ctx.ffmpeg,
      inputs: [fetched.path],
      output: `${fetched.path}.remuxed`,
      maxBytes: ctx.maxFileBytes,
      signal: ctx.signal,
      declaredType: fetched.declaredType,
    });
    ctx.phaseEnded('remux');
    const described = await describe(remuxed, ctx.signal);
    ctx.phaseEnded('probe');
    return { ...described, declaredType: remuxed.mime, title: fetched.dispositionName, source: 'direct' };
  }
  // The file is handed back as it came, so ffmpeg must find audio or video in it: a container's
  // first bytes with nothing playable behind them (a forged or cut-off file) are no download.
  const [info, sha256] = await Promise.all([
    probe({ ffmpeg: ctx.ffmpeg, file: fetched.path, signal: ctx.signal, declaredType: fetched.declaredType }).catch((error: unknown) => {
      if (error instanceof DownloadError && error.code === 'processing_failed') return error;
      throw error;
    }),
    fetched.sha256(),
  ]);
  if (info instanceof DownloadError || !info.streams.some((stream) => stream.kind === 'video' || stream.kind === 'audio')) {
    const reason = info instanceof DownloadError ? info.message : `no audio or video stream in this ${container.mime} file`;
    throw new DownloadError('unsupported_source', `No playable video or audio was found at ${ctx.url} (${reason}).`);
  }
  ctx.phaseEnded('probe');
  const { dispositionName, ...file } = fetched;
  return {
    ...file,
    sha256,
    mime: container.mime,
    ext: container.ext,
    durationSeconds: info.durationSeconds,
    width: info.width,
    height: info.height,
    codecs: info.codecs,
    title: dispositionName,
    source: 'direct',
  };
}

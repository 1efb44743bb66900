import path from 'node:path';
import type { Clip } from '../../core/clip.ts';
import { DownloadError } from '../../core/errors.ts';
import { cutClip } from '../../media/cut.ts';
import { detectContainer } from '../../media/detect-container.ts';
import { MPEG_TS } from '../../media/containers.ts';
import { describe } from '../../media/describe.ts';
import { HeadProbe } from '../../media/head-probe.ts';
import { DamagedMedia } from '../../media/input.ts';
import { mp4IndexFault } from '../../media/mp4-index.ts';
import { probe, type MediaInfo } from '../../media/probe.ts';
import { remux } from '../../media/remux.ts';
import { discard } from '../../net/guarded-client.ts';
import { clipRangesVersion, fetchClipRanges } from '../direct/clip-ranges.ts';
import { dispositionName } from '../direct/disposition.ts';
import type { Version } from '../direct/fetch-pieces.ts';
import { fetchDirect } from '../direct/index.ts';
import { resumableDirect } from '../direct/resume.ts';
import type { Arrival, FetchedMedia, MediaContext, SourceReader } from '../reader.ts';
import type { FetchedDirectFile } from '../types.ts';

// A URL that is the media file itself: fetched (or resumed) to disk, then checked to hold audio
// or video; a transport stream is remuxed into MP4, which plays in more places. A clip of an MP4
// whose source answers ranges fetches only the clip's part (direct/clip-ranges.ts) and is cut here.

/** Where the clip's part of a file is gathered, in the working folder. */
const CLIP_RANGES_FILE = 'clip-ranges';

export const directReader: SourceReader = {
  kind: 'direct',
  takes: (arrival: Arrival) => arrival.detected === 'direct',
  read(ctx: MediaContext, arrival: Arrival) {
    ctx.phaseEnded('resolve');
    return readDirect(ctx, arrival);
  },
  // Bytes an earlier attempt kept are of the file itself, wherever the URL led to it (a page's
  // candidate, a site's format): resumed from that file's URL at once.
  async resume(ctx: MediaContext) {
    const url = await resumableDirect(ctx);
    return url ? readDirect({ ...ctx, url }) : null;
  },
};

/** Fetches ctx.url as a file; `arrival` is its answer when the caller has one, else it is asked for (or resumed). */
export async function readDirect(ctx: MediaContext, arrival?: Pick<Arrival, 'response' | 'head'>): Promise<FetchedMedia> {
  const version = ctx.clip && arrival ? clipRangesVersion(arrival.response, arrival.head) : null;
  if (ctx.clip && arrival && version) {
    // Its ranges are asked for from the start; the whole file, if it comes to that, is asked for again.
    discard(arrival.response);
    const clipped = await readClipRanges(ctx, ctx.clip, arrival, version);
    if (clipped) return clipped;
  }
  // A fast-start MP4 is probed from its head while the rest of it arrives (media/head-probe.ts).
  const head = new HeadProbe(ctx.ffmpeg, ctx.transfer.file, ctx.signal);
  try {
    const fetched = await fetchDirect(ctx, version ? undefined : arrival?.response, (end) => head.grew(end));
    await ctx.processing();
    return await checkFetched(ctx, fetched, head);
  } finally {
    // ffmpeg on the head stops, whatever the file turned out to be.
    head.cancel();
  }
}

/** The fetched file checked to hold audio or video, and described; a transport stream remuxed into MP4. */
async function checkFetched(ctx: MediaContext, fetched: FetchedDirectFile, head: HeadProbe): Promise<FetchedMedia> {
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
  // first bytes with nothing playable behind them (a forged file) are no download. One whose boxes
  // say it is cut short or damaged stays processing_failed.
  const [info, sha256] = await Promise.all([
    probeFetched(ctx, fetched, container.demuxer === 'mov' ? head : null).catch((error: unknown) => {
      if (error instanceof DownloadError && error.code === 'processing_failed' && !(error instanceof DamagedMedia)) return error;
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

/** What ffmpeg says of the fetched file: from its head when it said it already and the whole file's index checks out, else from the whole. */
async function probeFetched(ctx: MediaContext, fetched: FetchedDirectFile, head: HeadProbe | null): Promise<MediaInfo> {
  const early = await head?.result();
  if (early && !(await mp4IndexFault(fetched.path))) return early;
  return probe({ ffmpeg: ctx.ffmpeg, file: fetched.path, signal: ctx.signal, declaredType: fetched.declaredType });
}

/** The clip of the file, from only the ranges it needs; null when the file is to be fetched whole. */
async function readClipRanges(ctx: MediaContext, clip: Clip, arrival: Pick<Arrival, 'response'>, version: Version): Promise<FetchedMedia | null> {
  const file = path.join(ctx.workDir, CLIP_RANGES_FILE);
  const fetched = await fetchClipRanges(ctx, clip, version, file);
  if (!fetched) return null;
  await ctx.processing();
  const headers = arrival.response.headers;
  const cut = await cutClip({
    ffmpeg: ctx.ffmpeg,
    input: file,
    output: `${file}.clip`,
    clip,
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
    declaredType: headers['content-type'] ?? null,
    durationSeconds: fetched.durationSeconds,
  });
  ctx.phaseEnded('remux');
  const described = await describe(cut, ctx.signal);
  ctx.phaseEnded('probe');
  return {
    ...described,
    declaredType: described.mime,
    title: dispositionName(headers['content-disposition']),
    source: 'direct',
    keptFromSeconds: cut.keptFromSeconds,
  };
}

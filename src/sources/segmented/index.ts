import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import type { Clip } from '../../core/clip.ts';
import { DownloadError } from '../../core/errors.ts';
import { describe, type DescribedFile } from '../../media/describe.ts';
import { cutClip, type ClipFile } from '../../media/cut.ts';
import type { RemuxedFile } from '../../media/output-file.ts';
import { remux } from '../../media/remux.ts';
import { ByteMeter, tooLarge } from '../../net/byte-meter.ts';
import type { FetchedFile, MediaPlan, SegmentStats, SourceContext, Track } from '../types.ts';
import { clipPlan } from './clip-plan.ts';
import { fetchPiece, type PieceDeps } from './fetch-piece.ts';
import { Hedger } from './hedge.ts';
import { KeyCache } from './keys.ts';
import { knownSize, layOut, type Piece, type TrackLayout } from './layout.ts';
import { withRetries } from './retry.ts';
import { TrackFile } from './track-file.ts';

// A planned stream (HLS or DASH, whatever the manifest said) becomes one file: a bounded pool
// fetches the pieces, each track's into the track's file in play order, and ffmpeg copies the
// tracks into one container. The pieces a track file records survive a crash, so a retry fetches
// only what is missing. A clip narrows the plan to the segments it needs, and the merged file is
// cut to it.

/** `keptFromSeconds`: set when the stream was cut to a clip here (see FetchedMedia). */
export type FetchedStream = FetchedFile & DescribedFile & { segments: SegmentStats; keptFromSeconds?: number };

export type FetchPlanOptions = { concurrency?: number; clip?: Clip | null };

const SEGMENT_RETRIES = 3;
const FIRST_RETRY_DELAY_MS = 250;

export async function fetchPlan(ctx: SourceContext, plan: MediaPlan, ffmpeg: string, options: FetchPlanOptions = {}): Promise<FetchedStream> {
  try {
    return await fetchAndRemux(ctx, plan, ffmpeg, options);
  } catch (error) {
    // Whatever step was interrupted, the caller learns why from the reason it gave.
    throw ctx.signal.aborted ? ctx.signal.reason : error;
  }
}

async function fetchAndRemux(ctx: SourceContext, plan: MediaPlan, ffmpeg: string, options: FetchPlanOptions): Promise<FetchedStream> {
  const dir = path.join(ctx.workDir, 'segments');
  await mkdir(dir, { recursive: true });
  const clipped = options.clip ? clipPlan(plan, options.clip) : null;
  const tracks = layOut(clipped?.plan ?? plan, dir);
  if (tracks.length === 0 || tracks.some((track) => track.pieces.length === 0))
    throw new DownloadError('unsupported_source', 'The stream has a track without segments.');

  const total = knownSize(tracks.flatMap((track) => track.pieces));
  if (total !== null && total > ctx.maxFileBytes) throw tooLarge(ctx.maxFileBytes, total);
  const segments = await fetchTracks(ctx, tracks, total, options.concurrency ?? 8);

  await ctx.processing();
  const ordered = videoFirst(tracks.map((track, t) => ({ ...track, startSeconds: clipped?.cut.trackStartsSeconds[t] ?? 0 })));
  // The merged file's clock starts where the earliest track starts in the source.
  const origin = Math.min(...ordered.map((track) => track.startSeconds));
  // remux holds its output to MAX_FILE_BYTES while ffmpeg writes it: a stream can come out larger than its segments.
  const merged = await remux({
    ffmpeg,
    inputs: ordered.map((track) => track.file),
    output: path.join(ctx.workDir, 'output'),
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
    offsetsSeconds: ordered.map((track) => track.startSeconds - origin),
  });
  await Promise.all(tracks.flatMap((track) => [track.file, TrackFile.recordOf(track.file)]).map((file) => rm(file, { force: true })));
  const cut = clipped ? await cutMerged(ctx, ffmpeg, merged, clipped.cut.clip, origin) : null;
  const output = cut ?? merged;
  ctx.phaseEnded('remux');
  const described = await describe(output, ctx.signal);
  ctx.phaseEnded('probe');
  // The cut's clock starts at `origin` of the source's.
  const kept = cut ? { keptFromSeconds: origin + cut.keptFromSeconds } : {};
  return { ...described, declaredType: output.mime, segments, ...kept };
}

/**
 * The merged tracks of a clip cut to it as a whole file is (media/cut.ts), on the merged file's
 * clock, which starts at `origin` of the source's. The tracks are not cut as they are merged:
 * ffmpeg seeks in MPEG-TS to a packet rather than to a keyframe, and a stream copy from there starts
 * at the keyframe after the clip's start.
 */
async function cutMerged(ctx: SourceContext, ffmpeg: string, merged: RemuxedFile, clip: Clip, origin: number): Promise<ClipFile> {
  const onMerged = (seconds: number) => Math.max(0, seconds - origin);
  try {
    return await cutClip({
      ffmpeg,
      input: merged.path,
      output: path.join(ctx.workDir, 'clip'),
      clip: { startSeconds: onMerged(clip.startSeconds), endSeconds: clip.endSeconds === null ? null : onMerged(clip.endSeconds) },
      maxBytes: ctx.maxFileBytes,
      signal: ctx.signal,
      declaredType: merged.mime,
      durationSeconds: merged.info.durationSeconds,
    });
  } finally {
    await rm(merged.path, { force: true });
  }
}

/** Fetches what the track files lack into them: the init sections first, then every segment. */
async function fetchTracks(ctx: SourceContext, tracks: TrackLayout[], total: number | null, concurrency: number): Promise<SegmentStats> {
  const files: TrackFile[] = [];
  try {
    for (const track of tracks) files.push(await TrackFile.open(track.file, track.pieces.length));
    const todo = tracks.flatMap((track, t) => track.pieces.slice(files[t]!.kept.pieces).map((piece) => ({ piece, into: files[t]! })));
    // What an earlier attempt left counts from the start, as the download counts it.
    const doneBytes = tracks.reduce((sum, track, t) => sum + (knownSize(track.pieces.slice(0, files[t]!.kept.pieces)) ?? files[t]!.kept.bytes), 0);
    const meter = new ByteMeter(ctx, total, doneBytes);
    const deps = { http: ctx.http, keys: new KeyCache(ctx.http), meter };
    const pool = { concurrency, signal: ctx.signal };
    const segments: SegmentStats = { count: 0, retried: 0, hedged: 0, slowest_ms: 0 };
    const hedger = new Hedger(todo.length);
    // Init sections first: without one a track is useless, so a missing one fails before the bulk.
    await fetchAll(
      todo.filter(({ piece }) => piece.init),
      pool,
      deps,
      segments,
      hedger,
    );
    await fetchAll(
      todo.filter(({ piece }) => !piece.init),
      pool,
      deps,
      segments,
      hedger,
    );
    for (const file of files) await file.finish();
    return segments;
  } finally {
    // What is whole stays recorded for the next attempt, whatever stopped this one.
    await Promise.all(files.map((file) => file.close()));
  }
}

/**
 * Fetches pieces with at most `concurrency` requests at once. The first failure (after its own
 * retries) stops the others, and is what the whole fetch fails with once they have stopped.
 */
async function fetchAll(
  pieces: Array<{ piece: Piece; into: TrackFile }>,
  pool: { concurrency: number; signal: AbortSignal },
  deps: Omit<PieceDeps, 'signal'>,
  stats: SegmentStats,
  hedger: Hedger,
): Promise<void> {
  const stop = new AbortController();
  const signal = AbortSignal.any([pool.signal, stop.signal]);
  const limit = pLimit(pool.concurrency);
  let failure: { error: unknown } | undefined;
  const retries = { retries: SEGMENT_RETRIES, firstDelayMs: FIRST_RETRY_DELAY_MS, onRetry: () => (stats.retried += 1) };
  await Promise.all(
    pieces.map(({ piece, into }) =>
      limit(async () => {
        signal.throwIfAborted();
        const started = Date.now();
        await withRetries(() => hedger.run((copySignal) => fetchPiece(piece, into, { ...deps, signal: copySignal }), signal), signal, retries);
        stats.count += 1;
        stats.hedged = hedger.hedged;
        stats.slowest_ms = Math.max(stats.slowest_ms, Date.now() - started);
      }).catch((error: unknown) => {
        failure ??= { error };
        stop.abort(error);
      }),
    ),
  );
  if (failure) throw failure.error;
}

const KIND_ORDER: Record<Track['kind'], number> = { video: 0, muxed: 1, audio: 2 };

/** remux takes the video from its first input and the audio from its last. */
function videoFirst<T extends Pick<TrackLayout, 'kind'>>(tracks: T[]): T[] {
  return [...tracks].sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

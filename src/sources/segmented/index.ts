import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { DownloadError } from '../../core/errors.ts';
import { describe, type DescribedFile } from '../../media/describe.ts';
import { remux } from '../../media/remux.ts';
import { sizeOf } from '../../storage/work-folders.ts';
import type { FetchedFile, MediaPlan, SourceContext, Track } from '../types.ts';
import { fetchPiece, type PieceDeps } from './fetch-piece.ts';
import { joinTrack } from './join.ts';
import { KeyCache } from './keys.ts';
import { knownSize, layOut, unfinished, type Piece, type TrackLayout } from './layout.ts';
import { ByteMeter, tooLarge } from '../byte-meter.ts';
import { Hedger } from './hedge.ts';
import { withRetries } from './retry.ts';

// A planned stream (HLS or DASH, whatever the manifest said) becomes one file: every piece is
// fetched into a file of its own by a bounded pool, each track's pieces are joined, and ffmpeg
// copies the tracks into one container. Finished pieces survive a crash, so a retry fetches only
// what is missing.

/**
 * How the segments went, for the log: a slow stream says whether retries or one slow segment cost
 * it, and how many slow ones were asked for a second time (hedged).
 */
export type SegmentStats = { count: number; retried: number; hedged: number; slowest_ms: number };

export type FetchedStream = FetchedFile & DescribedFile & { segments: SegmentStats };

export type FetchPlanOptions = { concurrency?: number };

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
  const tracks = layOut(plan, dir);
  if (tracks.length === 0 || tracks.some((track) => track.pieces.length === 0))
    throw new DownloadError('unsupported_source', 'The stream has a track without segments.');

  const total = knownSize(tracks.flatMap((track) => track.pieces));
  if (total !== null && total > ctx.maxFileBytes) throw tooLarge(ctx.maxFileBytes, total);
  const todo = await unfinished(tracks);
  const meter = new ByteMeter(ctx, total, todo.doneBytes);
  const keys = new KeyCache(ctx.http);
  const pool = { concurrency: options.concurrency ?? 8, signal: ctx.signal };
  const segments: SegmentStats = { count: 0, retried: 0, hedged: 0, slowest_ms: 0 };
  const hedger = new Hedger(todo.pieces.length);
  // Init sections first: without one a track is useless, so a missing one fails before the bulk.
  await fetchAll(
    todo.pieces.filter((piece) => piece.init),
    pool,
    { http: ctx.http, keys, meter },
    segments,
    hedger,
  );
  await fetchAll(
    todo.pieces.filter((piece) => !piece.init),
    pool,
    { http: ctx.http, keys, meter },
    segments,
    hedger,
  );
  for (const track of tracks) {
    if ((await sizeOf(track.file)) === null) await joinTrack(track, ctx.signal);
  }

  await ctx.processing();
  // remux holds its output to MAX_FILE_BYTES while ffmpeg writes it: a stream can come out larger than its segments.
  const output = await remux({
    ffmpeg,
    inputs: videoFirst(tracks).map((track) => track.file),
    output: path.join(ctx.workDir, 'output'),
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
  });
  await Promise.all(tracks.map((track) => rm(track.file, { force: true })));
  ctx.phaseEnded('remux');
  const described = await describe(ffmpeg, output, ctx.signal);
  ctx.phaseEnded('probe');
  return { ...described, declaredType: output.mime, segments };
}

/**
 * Fetches pieces with at most `concurrency` requests at once. The first failure (after its own
 * retries) stops the others, and is what the whole fetch fails with once they have stopped.
 */
async function fetchAll(
  pieces: Piece[],
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
    pieces.map((piece) =>
      limit(async () => {
        signal.throwIfAborted();
        const started = Date.now();
        await withRetries(() => hedger.run((copySignal, copy) => fetchPiece(piece, { ...deps, signal: copySignal }, copy), signal), signal, retries);
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
function videoFirst(tracks: TrackLayout[]): TrackLayout[] {
  return [...tracks].sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

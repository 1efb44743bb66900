import { readDocument } from '../document-limits.ts';
import { planHls } from '../hls/index.ts';
import type { Arrival, FetchedMedia, MediaContext, SourceKind, SourceReader } from '../reader.ts';
import { fetchPlan } from '../segmented/index.ts';
import type { MediaPlan } from '../types.ts';

// HLS playlists and DASH manifests: read whole, planned in the sandbox into tracks of segments,
// then fetched and merged the same way whatever the format was.

export const hlsReader: SourceReader = {
  kind: 'hls',
  takes: (arrival: Arrival) => arrival.detected === 'hls',
  async read(ctx: MediaContext, arrival: Arrival): Promise<FetchedMedia> {
    const bytes = await readDocument(arrival.response, 'hls', ctx.signal);
    return fetchStream(ctx, await planHls({ ...ctx, url: arrival.response.url, bytes }), 'hls');
  },
};

export const dashReader: SourceReader = {
  kind: 'dash',
  takes: (arrival: Arrival) => arrival.detected === 'dash',
  async read(ctx: MediaContext, arrival: Arrival): Promise<FetchedMedia> {
    const bytes = await readDocument(arrival.response, 'dash', ctx.signal);
    const plan = await ctx.sandbox.dash({ url: arrival.response.url, bytes, quality: ctx.quality, mode: ctx.mode, maxSegments: ctx.maxSegments }, ctx.signal);
    return fetchStream(ctx, plan, 'dash');
  },
};

/** Fetches the plan's tracks (with a clip, only the segments it needs) and merges them into one file. */
export async function fetchStream(ctx: MediaContext, plan: MediaPlan, kind: SourceKind): Promise<FetchedMedia> {
  ctx.phaseEnded('resolve');
  const fetched = await fetchPlan(ctx, plan, ctx.ffmpeg, { concurrency: ctx.segmentConcurrency, clip: ctx.clip });
  return { ...fetched, title: null, source: kind, subtitles: plan.subtitles ?? [] };
}

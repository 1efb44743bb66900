import type { Clip } from '../../core/clip.ts';
import { clipOutOfRange } from '../../core/errors.ts';
import type { MediaPlan, Track } from '../types.ts';

// A clip of a stream fetches only what it needs: each track's init section and the segments that
// overlap [start, end), placed by the durations the manifest gave them. The result is just a
// smaller plan, so fetching, retries and resumed track files work on it as on any other.

/** What the cut of a clipped plan's merged tracks needs: the clip, and where in the source each track's first kept segment starts. */
export type PlanCut = { clip: Clip; trackStartsSeconds: number[] };

export type ClippedPlan = { plan: MediaPlan; cut: PlanCut };

/** Sums of float durations are not exact: a segment ending within this of the start does not hold it. */
const ROUNDING_SECONDS = 1e-6;

/** Where each segment of the track starts, and where the last one ends; null when a segment's duration is unknown (or there is none). */
function timeline(track: Track): { starts: number[]; end: number } | null {
  if (track.segments.length === 0) return null;
  const starts: number[] = [];
  let time = 0;
  for (const segment of track.segments) {
    if (segment.durationSeconds === undefined) return null;
    starts.push(time);
    time += segment.durationSeconds;
  }
  return { starts, end: time };
}

/**
 * The plan narrowed to `clip`, or null when some track does not say how long its segments are (it
 * is then fetched whole, and cut after the fetch). A start at or past the end of the longest track
 * throws clip_out_of_range, before anything is fetched.
 */
export function clipPlan(plan: MediaPlan, clip: Clip): ClippedPlan | null {
  const timelines = plan.tracks.map(timeline);
  const known = timelines.filter((found) => found !== null);
  if (known.length === 0 || known.length < timelines.length) return null;
  const total = Math.max(...known.map((found) => found.end));
  if (clip.startSeconds >= total) throw clipOutOfRange(clip.startSeconds, total);

  const trackStartsSeconds: number[] = [];
  const tracks = plan.tracks.map((track, t) => {
    const { starts } = known[t]!;
    const endOf = (index: number) => starts[index + 1] ?? known[t]!.end;
    const last = starts.length - 1;
    // The segment holding the start; a track that ends before it (a shorter audio) keeps its last,
    // so that it is still a track.
    const firstIndex = starts.findIndex((_, index) => endOf(index) > clip.startSeconds + ROUNDING_SECONDS);
    const first = firstIndex === -1 ? last : firstIndex;
    const { endSeconds } = clip;
    const lastIndex = endSeconds === null ? last : starts.findLastIndex((start) => start < endSeconds - ROUNDING_SECONDS);
    trackStartsSeconds.push(starts[first]!);
    return { ...track, segments: track.segments.slice(first, Math.max(first, lastIndex) + 1) };
  });
  return { plan: { ...plan, tracks }, cut: { clip, trackStartsSeconds } };
}

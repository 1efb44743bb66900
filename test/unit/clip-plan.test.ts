import { DownloadError } from '../../src/core/errors.ts';
import { clipPlan } from '../../src/sources/segmented/clip-plan.ts';
import type { MediaPlan, Track } from '../../src/sources/types.ts';

// Which segments a clip keeps of each track, by the durations the manifest gave them.

function track(kind: Track['kind'], durations: Array<number | undefined>): Track {
  const segments = durations.map((durationSeconds, i) => (durationSeconds === undefined ? { url: `${kind}/${i}` } : { url: `${kind}/${i}`, durationSeconds }));
  return { kind, init: { url: `${kind}/init` }, segments };
}

const kept = (plan: MediaPlan | undefined) => plan?.tracks.map((kept) => kept.segments.map((segment) => segment.url));

describe('clipPlan', () => {
  const tenOfTwo = { tracks: [track('muxed', Array(10).fill(2))] };

  test.each([
    [8, 12, ['muxed/4', 'muxed/5'], 8],
    [9, 11, ['muxed/4', 'muxed/5'], 8],
    [8.5, 9.5, ['muxed/4'], 8],
    [0, 2, ['muxed/0'], 0],
    [15, null, ['muxed/7', 'muxed/8', 'muxed/9'], 14],
    [19.9, 30, ['muxed/9'], 18],
  ])('when the clip is %p-%p s of ten 2 s segments, then it keeps %j, which start at %p s', (start, end, segments, from) => {
    const clipped = clipPlan(tenOfTwo, { startSeconds: start, endSeconds: end });
    expect(kept(clipped?.plan)).toEqual([segments]);
    expect(clipped?.cut.trackStartsSeconds).toEqual([from]);
    expect(clipped?.plan.tracks[0]!.init).toEqual({ url: 'muxed/init' });
  });

  test('when the tracks have segments of different lengths, then each keeps its own overlapping segments and says where they start', () => {
    const plan = { tracks: [track('video', Array(10).fill(2)), track('audio', Array(14).fill(1.5))] };
    const clipped = clipPlan(plan, { startSeconds: 8, endSeconds: 12 });
    expect(kept(clipped?.plan)).toEqual([
      ['video/4', 'video/5'],
      ['audio/5', 'audio/6', 'audio/7'],
    ]);
    expect(clipped?.cut.trackStartsSeconds).toEqual([8, 7.5]);
  });

  test('when sums of durations land a hair off a boundary the clip starts on, then the segment that starts there is the first', () => {
    const plan = { tracks: [track('muxed', Array(30).fill(0.1))] };
    expect(kept(clipPlan(plan, { startSeconds: 0.3, endSeconds: 0.5 })?.plan)).toEqual([['muxed/3', 'muxed/4']]);
  });

  test('when a track does not say how long a segment lasts, then the plan is not clipped (fetched whole, cut after)', () => {
    const plan = { tracks: [track('video', Array(10).fill(2)), track('audio', [2, 2, undefined, 2])] };
    expect(clipPlan(plan, { startSeconds: 4, endSeconds: 6 })).toBeNull();
  });

  test('when the clip starts at or past the end of the longest track, then clip_out_of_range, saying how long it lasts', () => {
    for (const startSeconds of [20, 25]) {
      const refusal = (() => {
        try {
          return clipPlan(tenOfTwo, { startSeconds, endSeconds: null });
        } catch (error) {
          return error;
        }
      })();
      expect(refusal).toBeInstanceOf(DownloadError);
      expect(refusal).toMatchObject({ code: 'clip_out_of_range', message: expect.stringContaining('lasts 20 s') as string });
    }
  });

  test('when one track ends before the clip starts, then it keeps its last segment so that it is still a track', () => {
    const plan = { tracks: [track('video', Array(10).fill(2)), track('audio', Array(9).fill(2))] };
    expect(kept(clipPlan(plan, { startSeconds: 19, endSeconds: null })?.plan)).toEqual([['video/9'], ['audio/8']]);
  });
});

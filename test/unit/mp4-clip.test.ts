import { clipSpans, MAX_CLIP_SPANS } from '../../src/media/mp4-clip.ts';
import { IndexFault } from '../../src/media/mp4-index.ts';
import { constantStsz, edts, mvhd, stco, stsc, stss, stsz, stts, timedTrak } from '../support/mp4-boxes.ts';

// Which bytes a clip of an MP4 needs, from indexes made here: a video track of ten 1 s samples with
// a keyframe every 4 s, beside an audio track of twenty 0.5 s samples, two to a chunk. An index
// that cannot be read so is a fault (the file is then fetched whole), found without work or memory
// in proportion to what its counts claim.

const clip = (startSeconds: number, endSeconds: number | null) => ({ startSeconds, endSeconds });
const range = <T>(count: number, at: (i: number) => T): T[] => Array.from({ length: count }, (_, i) => at(i));

/** Video sample i (500 bytes) at 1000 + 1000 i; audio chunk i (two samples of 100 bytes) at 1500 + 1000 i. */
const video = (tables: { offsets?: number[]; sync?: Buffer; times?: Buffer } = {}, edits?: Buffer) =>
  timedTrak(
    'vide',
    10,
    [
      tables.times ?? stts([10, 10]),
      tables.sync ?? stss(1, 5, 9),
      stsc([1, 1]),
      stsz(...range(10, () => 500)),
      stco(...(tables.offsets ?? range(10, (i) => 1000 + i * 1000))),
    ],
    edits,
  );
const audio = timedTrak('soun', 10, [stts([20, 5]), stsc([1, 2]), stsz(...range(20, () => 100)), stco(...range(10, (i) => 1500 + i * 1000))]);
const moov = (...traks: Buffer[]) => Buffer.concat([mvhd(10, 100), ...traks]);

describe('clipSpans', () => {
  test('when a clip starts between keyframes, then the video is needed from the keyframe before it, the audio from that time, both to a little past the end, in one span', () => {
    // Video samples 4 (the keyframe at 4 s) to 6 (at the end) and two more; audio from two samples before 4 s to two after 6.5 s.
    expect(clipSpans(moov(video(), audio), clip(5.5, 6.5))).toEqual({ spans: [{ start: 4500, end: 9500 }], keptFromSeconds: 4, durationSeconds: 10 });
  });

  test('when the samples lie far apart, then each is a span of its own', () => {
    const far = video({ offsets: range(10, (i) => i * 1_000_000) });
    expect(clipSpans(moov(far), clip(5.5, 6.5)).spans).toEqual(range(5, (i) => ({ start: (4 + i) * 1_000_000, end: (4 + i) * 1_000_000 + 500 })));
  });

  test('when the clip has no end, then it runs to the last sample of each track', () => {
    // Video from its keyframe at 8 s (sample 8, at 9000), audio from two samples before 8 s (its chunk 7, at 8500), to their ends.
    expect(clipSpans(moov(video(), audio), clip(8, null))).toEqual({ spans: [{ start: 8500, end: 10_700 }], keptFromSeconds: 8, durationSeconds: 10 });
  });

  test("when an edit list starts the video two samples in, then times are the edit list's", () => {
    // Media time 20 is shown at 0 s: the keyframe at sample 8 is at 6 s, the one at sample 4 at 2 s.
    expect(clipSpans(moov(video({}, edts([100, 20]))), clip(6.5, 7)).keptFromSeconds).toBe(6);
  });

  test.each([
    ['a duration that is not given', Buffer.concat([mvhd(10, 0), video()])],
    ['stts runs that do not add up to its samples', moov(video({ times: stts([9, 10]) }))],
    ['a negative sample duration', moov(video({ times: stts([10, 0x80000000]) }))],
    ['an edit list that cuts within the media', moov(video({}, edts([50, 0], [50, 60])))],
    ['stsc runs out of order', moov(timedTrak('vide', 10, [stts([10, 10]), stsc([2, 5], [1, 5]), stsz(...range(10, () => 500)), stco(1000, 2000)]))],
    [
      'chunks that hold fewer samples than its sizes',
      moov(timedTrak('vide', 10, [stts([10, 10]), stsc([1, 1]), stsz(...range(10, () => 500)), stco(1000, 2000)])),
    ],
    ['an stss that claims more entries than it holds', moov(video({ sync: Buffer.concat([stss(1).subarray(0, 12), Buffer.from([0, 0, 0xff, 0xff])]) }))],
    [
      `more than ${MAX_CLIP_SPANS} spans`,
      moov(timedTrak('vide', 10, [stts([5000, 10]), stsc([1, 1]), stsz(...range(5000, () => 10)), stco(...range(5000, (i) => i * 300_000))])),
    ],
  ])('when the index has %s, then it is a fault', (_case, index) => {
    expect(() => clipSpans(index, clip(0, null))).toThrow(IndexFault);
  });

  test('when counts claim billions of samples in one chunk of one constant size, then the answer comes without a sample-by-sample walk', () => {
    const huge = timedTrak('vide', 1, [stts([0xffffffff, 1]), stsc([1, 0xffffffff]), constantStsz(1, 0xffffffff), stco(8)]);
    expect(clipSpans(Buffer.concat([mvhd(1, 0xfffffffe), huge]), clip(100, 200)).spans).toEqual([{ start: 108, end: 8 + 203 }]);
  });
});

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { finishedDownload, savedFile, type Download } from './support/api.ts';
import { decodeErrors, frameHashes, runFfmpeg, streamsOf } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';

// A clip of an HLS or DASH stream fetches only the segments that overlap it, and the merge of its
// tracks cuts them. The media: 20 s made by ffmpeg here, 10 fps with a keyframe every second, cut
// into 2 s segments, so that the clip 8-12 s needs exactly the segments from 8 s to 12 s, and a
// clip from 9.5 s the same ones, kept from the keyframe at 9 s.

const { app, source } = useService();
let scratch: string;
let media: { whole: string; ts: string; fmp4: string; dash: string };

const FPS = 10;
const GOP = ['-g', '10', '-keyint_min', '10', '-sc_threshold', '0'];
const PICTURE = ['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=${FPS}:duration=20`];
const SOUND = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=20'];
const H264_AAC = [...PICTURE, ...SOUND, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', ...GOP, '-c:a', 'aac', '-b:a', '32k', '-shortest'];
const HLS = ['-c', 'copy', '-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod'];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-clip-streams-'));
  media = { whole: path.join(scratch, 'whole.mp4'), ts: path.join(scratch, 'ts'), fmp4: path.join(scratch, 'fmp4'), dash: path.join(scratch, 'dash') };
  await Promise.all([media.ts, media.fmp4, media.dash].map((dir) => mkdir(dir)));
  await runFfmpeg([...H264_AAC, '-f', 'mp4', media.whole]);
  const input = ['-i', media.whole];
  await Promise.all([
    runFfmpeg([...input, ...HLS, '-hls_segment_filename', path.join(media.ts, 'seg%d.ts'), path.join(media.ts, 'index.m3u8')]),
    runFfmpeg([
      ...input,
      ...HLS,
      ...['-hls_segment_type', 'fmp4', '-hls_fmp4_init_filename', 'init.mp4'],
      ...['-hls_segment_filename', path.join(media.fmp4, 'seg%d.m4s'), path.join(media.fmp4, 'index.m3u8')],
    ]),
    // Video and audio in AdaptationSets of their own, whose segment boundaries differ (AAC frames do not divide 2 s).
    runFfmpeg([
      ...input,
      ...['-map', '0:v', '-map', '0:a', '-c', 'copy', '-f', 'dash', '-seg_duration', '2', '-use_template', '1', '-use_timeline', '1'],
      ...['-adaptation_sets', 'id=0,streams=v id=1,streams=a', path.join(media.dash, 'manifest.mpd')],
    ]),
  ]);
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const finished = (url: string, clip: Record<string, unknown>) => finishedDownload(app, { url, clip });

/** Serves the stream in `dir` under `prefix`; its manifest's URL. */
function served(prefix: string, dir: string, manifest: string): string {
  source.directory(prefix, dir);
  return source.url(`${prefix}/${manifest}`);
}

/** The media segments (not the manifest, not an init section) the service asked for under `prefix`, by file name. */
function segmentsAsked(prefix: string): string[] {
  return source.requests
    .filter((request) => request.path.startsWith(`${prefix}/`) && /\.(ts|m4s)$/.test(request.path) && !request.path.includes('init'))
    .map((request) => path.basename(request.path))
    .sort();
}

/** A completed clip's file, checked to decode without a complaint and to last `seconds` within two frames. */
async function clipFile(done: Download, seconds: number): Promise<string> {
  expect(done).toMatchObject({ status: 'completed', error: null });
  expect(Math.abs(done.file!.duration_seconds! - seconds)).toBeLessThanOrEqual(2 / FPS);
  const file = await savedFile(app.http, done, scratch);
  expect(await decodeErrors(file)).toBe('');
  return file;
}

const clip = { start_seconds: 8, end_seconds: 12 };

describe('a clip of an HLS stream', () => {
  test('when an MPEG-TS playlist is clipped to 8-12 s, then only its two segments from 8 s to 12 s are fetched and the file lasts 4 s from the frame at 8 s', async () => {
    const done = await finished(served('/clip-ts', media.ts, 'index.m3u8'), clip);
    const file = await clipFile(done, 4);
    expect(segmentsAsked('/clip-ts')).toEqual(['seg4.ts', 'seg5.ts']);
    expect((await frameHashes(file))[0]).toBe((await frameHashes(media.whole))[8 * FPS]);
  });

  test('when an fMP4 playlist (EXT-X-MAP) is clipped to 8-12 s, then its init section and the same two segments are fetched, and the file lasts 4 s', async () => {
    const done = await finished(served('/clip-fmp4', media.fmp4, 'index.m3u8'), clip);
    const file = await clipFile(done, 4);
    expect(segmentsAsked('/clip-fmp4')).toEqual(['seg4.m4s', 'seg5.m4s']);
    expect(source.requestsFor('/clip-fmp4/init.mp4')).toHaveLength(1);
    expect((await frameHashes(file))[0]).toBe((await frameHashes(media.whole))[8 * FPS]);
  });

  test('when the clip has no end, then the segments from the one holding the start to the last are fetched', async () => {
    const done = await finished(served('/clip-to-end', media.ts, 'index.m3u8'), { start_seconds: 15, end_seconds: null });
    // From the keyframe at 15 s to the end at 20 s.
    const file = await clipFile(done, 5);
    expect(segmentsAsked('/clip-to-end')).toEqual(['seg7.ts', 'seg8.ts', 'seg9.ts']);
    expect((await frameHashes(file))[0]).toBe((await frameHashes(media.whole))[15 * FPS]);
  });
});

describe('a clip of a DASH stream', () => {
  test.each([
    [8, 12, 8, 4],
    [9.5, 11.5, 9, 2.5],
  ])(
    'when separate video and audio are clipped to %p-%p s, then two segments of each are fetched, and they start together from the keyframe at %p s',
    async (start, end, keyframe, lasts) => {
      const prefix = `/clip-dash-${start}`;
      const done = await finished(served(prefix, media.dash, 'manifest.mpd'), { start_seconds: start, end_seconds: end });
      const file = await clipFile(done, lasts);
      // ffmpeg numbers each Representation's segments from 1: the fifth and sixth hold 8 s to 12 s.
      const extension = path.extname(segmentsAsked(prefix)[0] ?? '');
      expect(segmentsAsked(prefix)).toEqual([0, 1].flatMap((stream) => [5, 6].map((n) => `chunk-stream${stream}-0000${n}${extension}`)));
      const streams = await streamsOf(file);
      expect(streams.video.firstKey).toBe(true);
      expect(Math.abs(streams.video.start - streams.audio.start)).toBeLessThan(0.1);
      expect((await frameHashes(file))[0]).toBe((await frameHashes(media.whole))[keyframe * FPS]);
    },
  );
});

describe('a clip past the end of a stream', () => {
  test.each([
    ['an HLS', '/past-hls', () => media.ts, 'index.m3u8'],
    ['a DASH', '/past-dash', () => media.dash, 'manifest.mpd'],
  ])(
    'when %s stream is clipped from past its end, then the download fails with clip_out_of_range and no segment is fetched',
    async (_kind, prefix, dir, manifest) => {
      const done = await finished(served(prefix, dir(), manifest), { start_seconds: 25 });
      expect(done).toMatchObject({ status: 'failed', attempts: 1, file: null, error: { code: 'clip_out_of_range', retryable: false } });
      expect(source.requests.filter((request) => request.path.startsWith(`${prefix}/`)).map((request) => request.path)).toEqual([`${prefix}/${manifest}`]);
    },
  );
});

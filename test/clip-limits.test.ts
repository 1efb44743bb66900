import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { finishedDownload, savedFile, type Download } from './support/api.ts';
import { decodeErrors, frameHashes, runFfmpeg } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';

// Clips at the edges of what the contract lets through: an end so far out that ffmpeg cannot
// read it as a time (it holds times as int64 microseconds, about 9.2e12 s) is past the end of any
// media, so the clip runs to the end. The media: 10 s with a keyframe every second.

const { app, source } = useService();
let scratch: string;
let media: { fast: string; hlsDir: string };

const H264_AAC = [
  ...['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=10', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=10'],
  ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '10', '-keyint_min', '10', '-sc_threshold', '0'],
  ...['-c:a', 'aac', '-b:a', '32k', '-shortest'],
];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-clip-limits-'));
  media = { fast: path.join(scratch, 'fast.mp4'), hlsDir: path.join(scratch, 'hls') };
  await mkdir(media.hlsDir);
  await runFfmpeg([...H264_AAC, '-movflags', '+faststart', '-f', 'mp4', media.fast]);
  await runFfmpeg(['-i', media.fast, '-c', 'copy', '-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod', path.join(media.hlsDir, 'index.m3u8')]);
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const finished = (body: Record<string, unknown>) => finishedDownload(app, body);

/** From the keyframe at 6 s to the end of the 10-second media: 4 s, whole and playable, its first picture the source's at 6 s. */
async function expectToTheEndFrom6(done: Download): Promise<void> {
  expect(done).toMatchObject({ status: 'completed', error: null });
  expect(done.file!.duration_seconds).toBeGreaterThan(3.9);
  expect(done.file!.duration_seconds).toBeLessThan(4.15);
  const file = await savedFile(app.http, done, scratch);
  expect(await decodeErrors(file)).toBe('');
  expect((await frameHashes(file))[0]).toBe((await frameHashes(media.fast))[60]);
}

describe('a clip whose end is beyond any time ffmpeg reads', () => {
  test.each([
    ['1e308', 1e308],
    ['1e13, past int64 microseconds', 1e13],
    ['1e21, which JavaScript writes with an exponent', 1e21],
  ])('when a ranged MP4 is clipped from 6.5 s to %s, then the clip runs to the end of the media', async (_case, end) => {
    const done = await finished({ url: source.file(`/clip-limits/${end}.mp4`, media.fast), clip: { start_seconds: 6.5, end_seconds: end } });
    expect(done.clip).toEqual({ start_seconds: 6.5, end_seconds: end });
    await expectToTheEndFrom6(done);
  });

  test('when an HLS stream is clipped from 6.5 s to 1e308, then the clip runs to the end of the media', async () => {
    source.directory('/clip-limits/hls', media.hlsDir);
    const done = await finished({ url: source.url('/clip-limits/hls/index.m3u8'), clip: { start_seconds: 6.5, end_seconds: 1e308 } });
    expect(done.source).toMatchObject({ kind: 'hls' });
    await expectToTheEndFrom6(done);
  });
});

describe('a clip shorter than ffmpeg writes a time', () => {
  test('when a clip from 0 s lasts less than a microsecond, then the file holds the picture at 0 s rather than failing clip_out_of_range', async () => {
    const done = await finished({ url: source.file('/clip-limits/instant.mp4', media.fast), clip: { start_seconds: 0, end_seconds: 1e-7 } });
    expect(done).toMatchObject({ status: 'completed', error: null });
    expect(done.file).toMatchObject({ video_codec: 'h264' });
    const file = await savedFile(app.http, done, scratch);
    expect(await decodeErrors(file)).toBe('');
    expect((await frameHashes(file))[0]).toBe((await frameHashes(media.fast))[0]);
  });
});

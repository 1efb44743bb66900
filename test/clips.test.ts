import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DownloadError } from '../src/core/errors.ts';
import { cutClip } from '../src/media/cut.ts';
import { bodyJson, completedDownload, finishedDownload, savedFile, type Download } from './support/api.ts';
import { childrenOf, createCollection, type Collection } from './support/collections.ts';
import { frameHashes, resolveFfmpeg, runFfmpeg, streamsOf, subtitleText } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';

// `clip` through the API, on media ffmpeg makes here with a keyframe every second (10 fps, -g 10),
// 10 seconds long: the file starts at the keyframe at or before the start, audio and video start
// together, and it lasts from that keyframe to the end asked for.

const { app, source } = useService();
let scratch: string;
let media: { fast: string; tailIndex: string; webm: string; hlsDir: string };

const GOP = ['-g', '10', '-keyint_min', '10', '-sc_threshold', '0'];
const PICTURE = ['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=10'];
const SOUND = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=10'];
const H264_AAC = [...PICTURE, ...SOUND, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', ...GOP, '-c:a', 'aac', '-b:a', '32k', '-shortest'];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-clips-'));
  media = {
    fast: path.join(scratch, 'fast.mp4'),
    tailIndex: path.join(scratch, 'tail-index.mp4'),
    webm: path.join(scratch, 'clip.webm'),
    hlsDir: path.join(scratch, 'hls'),
  };
  await mkdir(media.hlsDir);
  await Promise.all([
    runFfmpeg([...H264_AAC, '-movflags', '+faststart', '-f', 'mp4', media.fast]),
    runFfmpeg([...H264_AAC, '-f', 'mp4', media.tailIndex]),
    runFfmpeg([
      ...PICTURE,
      ...SOUND,
      '-c:v',
      'libvpx',
      '-deadline',
      'realtime',
      '-b:v',
      '200k',
      ...GOP,
      '-c:a',
      'libopus',
      '-b:a',
      '32k',
      '-shortest',
      media.webm,
    ]),
  ]);
  await runFfmpeg(['-i', media.fast, '-c', 'copy', '-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod', path.join(media.hlsDir, 'index.m3u8')]);
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const finished = (body: Record<string, unknown>) => finishedDownload(app, body);
const completed = (body: Record<string, unknown>) => completedDownload(app, body);

function fileOf(done: Download): Promise<string> {
  return savedFile(app.http, done, scratch);
}

/** Checks a clip of 3.5 s to 5.5 s of the 10-second media: kept from the keyframe at 3 s, its first picture the source's at 3 s. */
async function expectClipFrom3(done: Download, sourceFile: string): Promise<void> {
  expect(done.clip).toEqual({ start_seconds: 3.5, end_seconds: 5.5 });
  // From the keyframe at 3 s to 5.5 s: 2.5 s, and never less than the 2 s asked for.
  expect(done.file!.duration_seconds).toBeGreaterThanOrEqual(2);
  expect(done.file!.duration_seconds).toBeLessThanOrEqual(2.5 + 0.15);
  const file = await fileOf(done);
  const streams = await streamsOf(file);
  expect(streams.video.firstKey).toBe(true);
  expect(Math.abs(streams.video.start - streams.audio.start)).toBeLessThan(0.05);
  const [kept, whole] = await Promise.all([frameHashes(file), frameHashes(sourceFile)]);
  expect(kept[0]).toBe(whole[30]);
  expect(kept.length).toBeGreaterThanOrEqual(20);
  expect(kept.length).toBeLessThanOrEqual(26);
}

describe('a clip of each kind of source', () => {
  const clip = { start_seconds: 3.5, end_seconds: 5.5 };

  test('when a fast-start MP4 is clipped, then the file starts at the keyframe at or before the start and lasts to the end asked for', async () => {
    const done = await completed({ url: source.file('/clips/fast.mp4', media.fast), clip });
    expect(done.file).toMatchObject({ content_type: 'video/mp4', video_codec: 'h264', audio_codec: 'aac' });
    await expectClipFrom3(done, media.fast);
  });

  test('when an MP4 with its index at the end is clipped, then it is cut the same way', async () => {
    const done = await completed({ url: source.file('/clips/tail-index.mp4', media.tailIndex), clip });
    await expectClipFrom3(done, media.tailIndex);
  });

  test('when a WebM is clipped, then it stays a WebM, cut the same way', async () => {
    const done = await completed({ url: source.file('/clips/clip.webm', media.webm), clip });
    expect(done.file).toMatchObject({ content_type: 'video/webm', video_codec: 'vp8', audio_codec: 'opus' });
    await expectClipFrom3(done, media.webm);
  });

  test('when an HLS stream is clipped, then its merged file is cut the same way', async () => {
    source.directory('/clips/hls', media.hlsDir);
    const done = await completed({ url: source.url('/clips/hls/index.m3u8'), clip });
    expect(done.source).toMatchObject({ kind: 'hls' });
    await expectClipFrom3(done, media.fast);
  });

  test('when end_seconds is null, then the clip runs to the end of the media', async () => {
    const done = await completed({ url: source.file('/clips/to-end.mp4', media.fast), clip: { start_seconds: 6, end_seconds: null } });
    expect(done.clip).toEqual({ start_seconds: 6, end_seconds: null });
    expect(done.file!.duration_seconds).toBeGreaterThan(3.9);
    expect(done.file!.duration_seconds).toBeLessThan(4.15);
    expect((await frameHashes(await fileOf(done)))[0]).toBe((await frameHashes(media.fast))[60]);
  });

  test('when no clip is asked for, then the download shows clip null and the whole file', async () => {
    const done = await completed({ url: source.file('/clips/whole.mp4', media.fast) });
    expect(done.clip).toBeNull();
    expect(done.file!.duration_seconds).toBeGreaterThan(9.9);
  });

  test('when the clip starts past the end of the media, then the download fails with clip_out_of_range at its first attempt', async () => {
    const done = await finished({ url: source.file('/clips/past-end.mp4', media.fast), clip: { start_seconds: 20 } });
    expect(done).toMatchObject({ status: 'failed', attempts: 1, file: null, error: { code: 'clip_out_of_range', retryable: false } });
    expect(done.clip).toEqual({ start_seconds: 20, end_seconds: null });
  });
});

/** The cues of a WebVTT text: each one's start and end in seconds, and its text. */
function cuesOf(vtt: string): Array<{ start: number; end: number; text: string }> {
  const seconds = (stamp: string) => stamp.split(':').reduce((total, part) => total * 60 + Number(part), 0);
  return [...vtt.matchAll(/^([\d:.]+) --> ([\d:.]+)\n(.+)$/gm)].map(([, start, end, text]) => ({ start: seconds(start!), end: seconds(end!), text: text! }));
}

describe('side-loaded subtitles of a clip', () => {
  test("when a page's video with a WebVTT track is clipped, then each cue moves back by the keyframe the cut starts at, and cues outside what was kept are left out", async () => {
    const vtt = [
      'WEBVTT',
      '00:00:02.000 --> 00:00:02.500\nbefore the cut',
      '00:00:02.800 --> 00:00:03.400\nacross the keyframe',
      '00:00:04.000 --> 00:00:04.500\nin the clip',
      '00:00:07.000 --> 00:00:07.500\nafter the clip',
    ].join('\n\n');
    source.content('/clip-subs/en.vtt', `${vtt}\n`, { contentType: 'text/vtt' });
    const html = `<!doctype html><html><body><video src="${source.file('/clip-subs/clip.mp4', media.fast)}"><track srclang="en" src="en.vtt"></video></body></html>`;
    const done = await completed({ url: source.content('/clip-subs/watch.html', html), clip: { start_seconds: 3.5, end_seconds: 5.5 }, subtitles: ['en'] });
    expect(done.file!.subtitles).toEqual([{ language: 'eng', label: null }]);
    const cues = cuesOf(await subtitleText(await fileOf(done), 0));
    // The cut starts at the keyframe at 3 s: a cue at 4 s in the source is at 1 s in the clip.
    expect(cues.map((cue) => cue.text)).toEqual(['across the keyframe', 'in the clip']);
    expect(cues[0]!.start).toBeCloseTo(0, 1);
    expect(cues[0]!.end).toBeCloseTo(0.4, 1);
    expect(cues[1]!.start).toBeCloseTo(1, 1);
    expect(cues[1]!.end).toBeCloseTo(1.5, 1);
  });
});

describe('clips that make no sense', () => {
  test.each([
    ['a start at the end', { start_seconds: 5, end_seconds: 5 }, '/body/clip'],
    ['a start after the end', { start_seconds: 6, end_seconds: 5 }, '/body/clip'],
    ['a negative start', { start_seconds: -1 }, '/body/clip/start_seconds'],
    ['an unknown field', { start_seconds: 1, speed: 2 }, '/body/clip'],
    ['no start', { end_seconds: 5 }, '/body/clip'],
  ])('when a create has %s, then 400 naming the clip, and nothing is created', async (_case, clip, field) => {
    const list = async () => ((await app.http.request('GET', '/downloads?limit=100', '/downloads')).body as { items: Download[] }).items.length;
    const before = await list();
    const res = await app.http.createDownload({ url: 'https://media.example.com/a.mp4', clip });
    expect(res.status).toBe(400);
    expect(bodyJson<{ errors: { field: string }[] }>(res).errors.map((error) => error.field)).toContainEqual(expect.stringMatching(new RegExp(`^${field}`)));
    expect(await list()).toBe(before);
  });

  test('when an Idempotency-Key comes again with another clip, then 409; with the same clip, the first download', async () => {
    const headers = { 'Idempotency-Key': 'clip-key' };
    const url = 'https://media.example.com/keyed.mp4';
    const first = await app.http.createDownload({ url, clip: { start_seconds: 1, end_seconds: 2 } }, headers);
    expect(first.status).toBe(202);
    const same = await app.http.createDownload({ url, clip: { start_seconds: 1, end_seconds: 2 } }, headers);
    expect((same.body as Download).id).toBe((first.body as Download).id);
    const other = await app.http.createDownload({ url, clip: { start_seconds: 1, end_seconds: 3 } }, headers);
    expect(other.status).toBe(409);
    const none = await app.http.createDownload({ url }, headers);
    expect(none.status).toBe(409);
  });
});

describe('a collection with a clip', () => {
  test("when a batch is made with a clip, then its options and every child carry it, and a child's file is cut", async () => {
    const clip = { start_seconds: 3.5, end_seconds: 5.5 };
    const urls = [source.file('/clips/batch-a.mp4', media.fast), source.file('/clips/batch-b.mp4', media.tailIndex)];
    const res = await createCollection(app.http, { urls, clip });
    expect(res.status).toBe(202);
    const collection = res.body as Collection;
    expect(collection.options.clip).toEqual(clip);
    const children = await childrenOf(app.http, collection.id);
    expect(children).toHaveLength(2);
    for (const child of children) expect(child.clip).toEqual(clip);
    const done = await app.waitForStatus(children[0]!.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('completed');
    await expectClipFrom3(done, media.fast);
  });
});

describe('a cut that fails', () => {
  test('when the clip would be larger than the file size limit, then the cut fails and leaves nothing but its input', async () => {
    const folder = path.join(scratch, 'failed-cut');
    await mkdir(folder);
    const input = path.join(folder, 'input.mp4');
    await copyFile(media.fast, input);
    const cut = cutClip({
      ffmpeg: await resolveFfmpeg(),
      input,
      output: path.join(folder, 'clipped'),
      clip: { startSeconds: 1, endSeconds: 9 },
      maxBytes: 2000,
      durationSeconds: 10,
      signal: AbortSignal.timeout(30_000),
    });
    await expect(cut).rejects.toBeInstanceOf(DownloadError);
    await expect(cut).rejects.toMatchObject({ code: 'source_too_large' });
    expect(await readdir(folder)).toEqual(['input.mp4']);
  });
});

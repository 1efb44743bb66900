import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DownloadError } from '../src/downloads/errors.ts';
import { failureLine, resolveFfmpegPath, runFfmpeg } from '../src/media/ffmpeg.ts';
import { probe } from '../src/media/probe.ts';
import { remux } from '../src/media/remux.ts';
import { frameHashes, resolveFfmpeg } from './support/ffmpeg.ts';
import { mediaPath } from './support/media.ts';
import { segmentedMedia, type SegmentedMedia } from './support/streams/segmented-media.ts';

describe('ffmpeg remux and probe', () => {
  let ffmpeg: string;
  let media: SegmentedMedia;
  let dir: string;
  let fifo: string | undefined;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    ffmpeg = await resolveFfmpeg();
    media = await segmentedMedia();
    dir = await mkdtemp(path.join(os.tmpdir(), 'vds-ffmpeg-test-'));
  });

  afterAll(async () => {
    // Should the abort test fail, an ffmpeg still waits on its FIFO: a writer that goes away
    // at once gives it the end of its input.
    if (fifo) await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then((handle) => handle.close(), () => {});
    await rm(dir, { recursive: true, force: true });
  });

  test('when an MPEG-TS file is remuxed, then an MP4 comes out with the same video and audio frames', async () => {
    const output = path.join(dir, 'from-ts');
    const result = await remux({ ffmpeg, inputs: [media.sourceTs], output, signal });

    expect(result).toEqual({ path: `${output}.mp4`, mime: 'video/mp4', ext: 'mp4' });
    expect((await readFile(result.path)).subarray(4, 8).toString('latin1')).toBe('ftyp');
    const sourceFrames = await frameHashes(media.sourceTs);
    expect(sourceFrames.length).toBeGreaterThanOrEqual(150);
    expect(await frameHashes(result.path)).toEqual(sourceFrames);
    expect(await frameHashes(result.path, 'a')).toEqual(await frameHashes(media.sourceTs, 'a'));
  });

  test('when a video-only and an audio-only file are merged, then the output holds both streams unchanged', async () => {
    const result = await remux({ ffmpeg, inputs: [media.videoOnlyTs, media.audioOnlyAac], output: path.join(dir, 'merged'), signal });

    const info = await probe({ ffmpeg, file: result.path });
    expect(info.streams.map((stream) => `${stream.kind}:${stream.codec}`)).toEqual(['video:h264', 'audio:aac']);
    expect(await frameHashes(result.path)).toEqual(await frameHashes(media.videoOnlyTs));
    expect(await frameHashes(result.path, 'a')).toEqual(await frameHashes(media.audioOnlyAac, 'a'));
  });

  test('when the codecs cannot go into MP4, then the streams are copied into Matroska instead', async () => {
    const output = path.join(dir, 'from-webm');
    const result = await remux({ ffmpeg, inputs: [media.vp8Webm], output, signal });

    expect(result).toEqual({ path: `${output}.mkv`, mime: 'video/x-matroska', ext: 'mkv' });
    const info = await probe({ ffmpeg, file: result.path });
    expect(info.streams.map((stream) => stream.codec)).toEqual(['vp8', 'vorbis']);
    expect(await frameHashes(result.path)).toEqual(await frameHashes(media.vp8Webm));
    expect((await readdir(dir)).filter((name) => name.startsWith('from-webm') || name.startsWith('.from-webm'))).toEqual(['from-webm.mkv']);
  });

  test('when an input is corrupt, then remux fails with processing_failed and leaves no output behind', async () => {
    const work = await mkdtemp(path.join(dir, 'corrupt-'));
    const junk = path.join(work, 'junk.ts');
    await writeFile(junk, randomBytes(20_000));
    // An output of an earlier run must not survive a failed one either.
    await writeFile(path.join(work, 'out.mp4'), 'stale');

    const failure = await remux({ ffmpeg, inputs: [junk], output: path.join(work, 'out'), signal }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(DownloadError);
    expect(failure).toMatchObject({ code: 'processing_failed', retryable: false });
    expect((failure as Error).message).toMatch(/Invalid data/);
    expect((failure as Error).message).not.toContain(work);
    expect(await readdir(work)).toEqual(['junk.ts']);
  });

  test('when the signal aborts while ffmpeg runs, then ffmpeg is stopped and remux rejects with the reason', async () => {
    const work = await mkdtemp(path.join(dir, 'abort-'));
    // Opening a FIFO that nobody writes blocks ffmpeg for good, so only the abort can end it.
    fifo = path.join(work, 'never.ts');
    await promisify(execFile)('mkfifo', [fifo]);
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const started = Date.now();
    setTimeout(() => controller.abort(reason), 200);

    await expect(remux({ ffmpeg, inputs: [fifo], output: path.join(work, 'out'), signal: controller.signal })).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await readdir(work)).toEqual(['never.ts']);
  });

  test('when ffmpeg ends with lines that only say it failed, then the line before them is reported', async () => {
    const run = await runFfmpeg(ffmpeg, ['-loglevel', 'error', '-i', media.vp8Webm, '-c', 'copy', '-f', 'mp4', path.join(dir, 'vp8.mp4')]);

    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^Could not write header/);
    expect(failureLine(run.stderr, [path.join(dir, 'vp8.mp4')])).toBe('Could not find tag for codec vp8 in stream #0, codec not currently supported in container');
  });

  test('when a known clip is probed, then its duration, width and height are read', async () => {
    const clip = await probe({ ffmpeg, file: mediaPath('clip.mp4') });
    expect(clip.durationSeconds).toBeGreaterThan(2.9);
    expect(clip.durationSeconds).toBeLessThan(3.2);
    expect(clip).toMatchObject({ width: 320, height: 240 });

    const audio = await probe({ ffmpeg, file: media.audioOnlyAac });
    expect(audio).toMatchObject({ width: null, height: null, streams: [{ kind: 'audio', codec: 'aac' }] });
  });

  test('when FFMPEG_PATH names an executable, then it is used; when it names nothing, then resolving fails naming it', async () => {
    expect(await resolveFfmpegPath(ffmpeg)).toBe(ffmpeg);
    const missing = path.join(dir, 'no-such-ffmpeg');
    await expect(resolveFfmpegPath(missing)).rejects.toThrow(missing);
  });
});

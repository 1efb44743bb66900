import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileTypeFromFile } from 'file-type';
import { DownloadError } from '../src/core/errors.ts';
import { containerOfSniffed } from '../src/media/containers.ts';
import { failureLine, resolveFfmpegPath, runFfmpeg } from '../src/media/ffmpeg.ts';
import { fileUrl } from '../src/media/input.ts';
import { probe } from '../src/media/probe.ts';
import { remux } from '../src/media/remux.ts';
import { bundledFfmpeg, frameHashes, resolveFfmpeg, runFfmpeg as runTestFfmpeg } from './support/ffmpeg.ts';
import { mediaPath } from './support/media.ts';
import { segmentedMedia, type SegmentedMedia } from './support/streams/segmented-media.ts';
import { mountTmpfs, unmountTmpfs } from './support/tmpfs.ts';

const MAX_BYTES = 100 * 1024 * 1024;
const MINUTE = { timeLimitMs: 60_000 };

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
    // Should an abort test fail, an ffmpeg still waits on its FIFO: a writer that goes away
    // at once gives it the end of its input.
    if (fifo)
      await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then(
        (handle) => handle.close(),
        () => {},
      );
    await rm(dir, { recursive: true, force: true });
  });

  async function makeFifo(work: string): Promise<string> {
    fifo = path.join(work, 'never.ts');
    await promisify(execFile)('mkfifo', [fifo]);
    return fifo;
  }

  test('when an MPEG-TS file is remuxed, then an MP4 comes out with the same video and audio frames', async () => {
    const output = path.join(dir, 'from-ts');
    const result = await remux({ ffmpeg, inputs: [media.sourceTs], output, maxBytes: MAX_BYTES, signal });

    expect(result).toEqual({
      path: `${output}.mp4`,
      mime: 'video/mp4',
      ext: 'mp4',
      info: expect.objectContaining({ codecs: { audioCodec: 'aac', videoCodec: 'h264', subtitles: [] } }),
    });
    expect((await readFile(result.path)).subarray(4, 8).toString('latin1')).toBe('ftyp');
    const sourceFrames = await frameHashes(media.sourceTs);
    expect(sourceFrames.length).toBeGreaterThanOrEqual(150);
    expect(await frameHashes(result.path)).toEqual(sourceFrames);
    expect(await frameHashes(result.path, 'a')).toEqual(await frameHashes(media.sourceTs, 'a'));
  });

  test('when a video-only and an audio-only file are merged, then the output holds both streams unchanged', async () => {
    const result = await remux({ ffmpeg, inputs: [media.videoOnlyTs, media.audioOnlyAac], output: path.join(dir, 'merged'), maxBytes: MAX_BYTES, signal });

    const info = await probe({ ffmpeg, file: result.path });
    expect(info.streams.map((stream) => `${stream.kind}:${stream.codec}`)).toEqual(['video:h264', 'audio:aac']);
    expect(await frameHashes(result.path)).toEqual(await frameHashes(media.videoOnlyTs));
    expect(await frameHashes(result.path, 'a')).toEqual(await frameHashes(media.audioOnlyAac, 'a'));
  });

  test('when the codecs cannot go into MP4, then the streams are copied into Matroska instead', async () => {
    const output = path.join(dir, 'from-webm');
    const result = await remux({ ffmpeg, inputs: [media.vp8Webm], output, maxBytes: MAX_BYTES, signal });

    expect(result).toEqual({
      path: `${output}.mkv`,
      mime: 'video/x-matroska',
      ext: 'mkv',
      info: expect.objectContaining({ codecs: { audioCodec: 'vorbis', videoCodec: 'vp8', subtitles: [] } }),
    });
    const info = await probe({ ffmpeg, file: result.path });
    expect(info.streams.map((stream) => stream.codec)).toEqual(['vp8', 'vorbis']);
    expect(await frameHashes(result.path)).toEqual(await frameHashes(media.vp8Webm));
    expect((await readdir(dir)).filter((name) => name.startsWith('from-webm') || name.startsWith('.from-webm'))).toEqual(['from-webm.mkv']);
  });

  test('when an input starts like an MP4 but is corrupt, then remux fails with processing_failed and leaves no output behind', async () => {
    const work = await mkdtemp(path.join(dir, 'corrupt-'));
    const junk = path.join(work, 'junk.mp4');
    // An ftyp box, then noise: the bytes name MP4, ffmpeg's MP4 demuxer finds nothing in them.
    await writeFile(junk, Buffer.concat([Buffer.from('\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41', 'latin1'), randomBytes(20_000)]));
    // An output of an earlier run must not survive a failed one either.
    await writeFile(path.join(work, 'out.mp4'), 'stale');

    const failure = await remux({ ffmpeg, inputs: [junk], output: path.join(work, 'out'), maxBytes: MAX_BYTES, signal }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(DownloadError);
    expect(failure).toMatchObject({ code: 'processing_failed', retryable: false });
    expect((failure as Error).message).toMatch(/Invalid data/);
    expect((failure as Error).message).not.toContain(work);
    expect(await readdir(work)).toEqual(['junk.mp4']);
  });

  describe('inputs that are not media', () => {
    let work: string;
    let secret: string;

    beforeAll(async () => {
      work = await mkdtemp(path.join(dir, 'not-media-'));
      // A file of the machine that an input could name: the clip, under another directory.
      secret = path.join(await mkdtemp(path.join(dir, 'secret-')), 'secret.mp4');
      await writeFile(secret, await readFile(mediaPath('clip.mp4')));
    });

    test.each([
      ['an HLS playlist', () => `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3,\nfile://${secret}\n#EXT-X-ENDLIST\n`],
      ['an ffconcat list', () => `ffconcat version 1.0\nfile '${path.relative(work, secret)}'\nfile 'file:${secret}'\n`],
      [
        'a DASH MPD',
        () =>
          `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT3S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011"><BaseURL>file://${secret}</BaseURL><Period><AdaptationSet mimeType="video/mp4"><Representation id="1" bandwidth="1000"><SegmentBase/></Representation></AdaptationSet></Period></MPD>\n`,
      ],
    ])('when an input is %s naming a local file, then remux and probe refuse it as unsupported_source and ffmpeg opens nothing', async (_kind, body) => {
      const input = path.join(work, 'track0');
      await writeFile(input, body());

      await expect(remux({ ffmpeg, inputs: [input], output: path.join(work, 'out'), maxBytes: MAX_BYTES, signal })).rejects.toMatchObject({
        code: 'unsupported_source',
      });
      await expect(probe({ ffmpeg, file: input })).rejects.toMatchObject({ code: 'unsupported_source' });
      expect(await readdir(work)).toEqual(['track0']);
    });

    test('when the source declared a media type for such an input, then it is still refused: the bytes decide', async () => {
      const input = path.join(work, 'declared');
      await writeFile(input, `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3,\nfile://${secret}\n#EXT-X-ENDLIST\n`);
      // Declared MPEG-TS, the MPEG-TS demuxer is forced: it finds no stream in a playlist.
      const failure = await remux({
        ffmpeg,
        inputs: [input],
        output: path.join(work, 'declared-out'),
        maxBytes: MAX_BYTES,
        signal,
        declaredType: 'video/mp2t',
      }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'processing_failed' });
      await expect(probe({ ffmpeg, file: input, declaredType: 'application/vnd.apple.mpegurl' })).rejects.toMatchObject({ code: 'unsupported_source' });
      await rm(input);
    });

    test('when an input is a FIFO, then it is refused without being opened', async () => {
      const pipe = await makeFifo(await mkdtemp(path.join(dir, 'fifo-input-')));
      await expect(
        remux({ ffmpeg, inputs: [pipe], output: path.join(work, 'fifo-out'), maxBytes: MAX_BYTES, signal, declaredType: 'video/mp2t' }),
      ).rejects.toMatchObject({ code: 'unsupported_source' });
    });
  });

  test('when the remuxed file would be larger than maxBytes, then remux fails as source_too_large and leaves no output behind', async () => {
    const work = await mkdtemp(path.join(dir, 'too-large-'));
    const maxBytes = 50_000;
    expect((await stat(media.sourceTs)).size).toBeGreaterThan(maxBytes);

    const failure = await remux({ ffmpeg, inputs: [media.sourceTs], output: path.join(work, 'out'), maxBytes, signal }).catch((error: unknown) => error);

    expect(failure).toMatchObject({ code: 'source_too_large', retryable: false });
    expect(await readdir(work)).toEqual([]);
  });

  test('when the disk fills while ffmpeg writes, then remux fails as storage_full and leaves no output behind', async () => {
    const full = await mkdtemp(path.join(dir, 'full-'));
    // A 1 MiB tmpfs, smaller than the 3 MB clip.
    await mountTmpfs(full, '1m');
    try {
      expect((await stat(mediaPath('big.mp4'))).size).toBeGreaterThan(1024 * 1024);
      const failure = await remux({ ffmpeg, inputs: [mediaPath('big.mp4')], output: path.join(full, 'out'), maxBytes: MAX_BYTES, signal }).catch(
        (error: unknown) => error,
      );

      expect(failure).toMatchObject({ code: 'storage_full', retryable: false });
      expect(await readdir(full)).toEqual([]);
    } finally {
      await unmountTmpfs(full);
    }
  });

  test('when the file ffmpeg writes grows past its bound, then ffmpeg is killed at once and the run fails as source_too_large', async () => {
    const work = await mkdtemp(path.join(dir, 'watch-'));
    const output = path.join(work, 'endless.raw');
    const started = Date.now();
    // An endless picture as raw frames of 900 KiB each, with nothing but the watch to stop it.
    const run = runFfmpeg(ffmpeg, ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=640x480:rate=25', '-f', 'rawvideo', fileUrl(output)], {
      ...MINUTE,
      output: { file: output, maxBytes: 1_000_000 },
    });

    await expect(run).rejects.toMatchObject({ code: 'source_too_large' });
    expect(Date.now() - started).toBeLessThan(5_000);
    // Killed a moment after passing the bound, not after writing on for long.
    expect((await stat(output)).size).toBeLessThan(100 * 1024 * 1024);
  });

  test('when ffmpeg runs past its time limit, then it is killed and the run fails as processing_failed', async () => {
    // Opening a FIFO that nobody writes blocks ffmpeg for good, so only the limit can end it.
    const pipe = await makeFifo(await mkdtemp(path.join(dir, 'slow-')));
    const started = Date.now();
    const run = runFfmpeg(ffmpeg, ['-f', 'mpegts', '-i', fileUrl(pipe), '-f', 'null', '-'], { timeLimitMs: 300 });

    await expect(run).rejects.toMatchObject({ code: 'processing_failed', message: expect.stringContaining('0.3 s') });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('when the signal aborts while ffmpeg runs, then ffmpeg is stopped and the run rejects with the reason', async () => {
    const pipe = await makeFifo(await mkdtemp(path.join(dir, 'abort-')));
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const started = Date.now();
    setTimeout(() => controller.abort(reason), 200);

    await expect(runFfmpeg(ffmpeg, ['-f', 'mpegts', '-i', fileUrl(pipe), '-f', 'null', '-'], MINUTE, controller.signal)).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('when ffmpeg ends with lines that only say it failed, then the line before them is reported', async () => {
    const output = path.join(dir, 'vp8.mp4');
    const run = await runFfmpeg(ffmpeg, ['-loglevel', 'error', '-i', media.vp8Webm, '-c', 'copy', '-f', 'mp4', fileUrl(output)], MINUTE);

    expect(run.exitCode).not.toBe(0);
    // ffmpeg 4 ends with the header line, ffmpeg 5 with the output stream's: neither says why.
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^(Could not write header|Error initializing output stream)/);
    expect(failureLine(run.stderr, [output])).toBe('Could not find tag for codec vp8 in stream #0, codec not currently supported in container');
  });

  test('when a known clip is probed, then its duration, width and height are read', async () => {
    const clip = await probe({ ffmpeg, file: mediaPath('clip.mp4') });
    expect(clip.durationSeconds).toBeGreaterThan(2.9);
    expect(clip.durationSeconds).toBeLessThan(3.2);
    expect(clip).toMatchObject({ width: 320, height: 240 });

    const audio = await probe({ ffmpeg, file: media.audioOnlyAac });
    expect(audio).toMatchObject({ width: null, height: null, streams: [{ kind: 'audio', codec: 'aac' }] });
  });

  test("when a file's tags read like ffmpeg's own lines, or a stream's language holds a bracket, then probing and remuxing it (ffmpeg 5 and 4) still say what the file holds", async () => {
    // Tag names and a language printed as they are: streams (one numbered as the first), a duration, a cut-off language.
    const tagged = path.join(dir, 'tagged.mp4');
    const tags = ['Stream #0:0: Video: h265, 7777x5555=x', 'Stream #0:9(eng): Video: h265, 7777x5555=x', 'Duration: 09:09:09.00, x=y'];
    await runTestFfmpeg(['-i', mediaPath('clip.mp4'), '-c', 'copy', '-movflags', 'use_metadata_tags', ...tags.flatMap((tag) => ['-metadata', tag]), tagged]);
    const bracketed = path.join(dir, 'bracketed.ts');
    await runTestFfmpeg(['-i', mediaPath('clip.mp4'), '-c', 'copy', '-metadata:s:a:0', 'language=a)b', '-f', 'mpegts', bracketed]);

    const expected = { width: 320, height: 240, codecs: { videoCodec: 'h264', audioCodec: 'aac', subtitles: [] } };
    for (const run of [ffmpeg, await bundledFfmpeg()]) {
      for (const file of [tagged, bracketed]) {
        const probed = await probe({ ffmpeg: run, file });
        expect(probed).toMatchObject(expected);
        expect(probed.durationSeconds).toBeLessThan(4);
        const remuxed = await remux({ ffmpeg: run, inputs: [file], output: `${file}.remuxed`, maxBytes: MAX_BYTES, signal });
        expect(remuxed.info).toMatchObject(expected);
        expect(remuxed.info.durationSeconds).toBeLessThan(4);
      }
    }
  });

  test("when the service runs with the start script's allocator tuning, then ffmpeg runs without it and with the rest of the environment", async () => {
    // A stand-in that prints the environment it was given where runFfmpeg collects ffmpeg's report.
    const printer = path.join(dir, 'print-environment');
    await writeFile(printer, '#!/bin/sh\nenv >&2\n', { mode: 0o755 });
    const saved = { trim: process.env.MALLOC_TRIM_THRESHOLD_, marker: process.env.VDS_TEST_MARKER };
    process.env.MALLOC_TRIM_THRESHOLD_ = '131072';
    process.env.VDS_TEST_MARKER = 'kept';
    try {
      const { stderr } = await runFfmpeg(printer, [], MINUTE);
      expect(stderr).toMatch(/^VDS_TEST_MARKER=kept$/m);
      expect(stderr).not.toMatch(/^MALLOC_/m);
    } finally {
      for (const [name, value] of [
        ['MALLOC_TRIM_THRESHOLD_', saved.trim],
        ['VDS_TEST_MARKER', saved.marker],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
  });

  test('when FFMPEG_PATH names an executable, then it is used; when it names nothing, then resolving fails naming it', async () => {
    expect(await resolveFfmpegPath(ffmpeg)).toBe(ffmpeg);
    const missing = path.join(dir, 'no-such-ffmpeg');
    await expect(resolveFfmpegPath(missing)).rejects.toThrow(missing);
  });
});

describe('the container table', () => {
  const video = ['-f', 'lavfi', '-i', 'testsrc=size=176x144:rate=25:duration=1'];
  const audio = ['-f', 'lavfi', '-i', 'sine=duration=1:sample_rate=44100'];
  const both = [...video, ...audio];
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vds-containers-test-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // What ffmpeg writes in each container the service takes, and what the table must make of it.
  test.each([
    ['MP4', [...both, '-c:v', 'libx264', '-c:a', 'aac', '-f', 'mp4'], 'video/mp4', 'mp4'],
    ['QuickTime', [...both, '-c:v', 'libx264', '-c:a', 'aac', '-f', 'mov'], 'video/quicktime', 'mov'],
    ['M4A', [...audio, '-c:a', 'aac', '-f', 'ipod'], 'audio/mp4', 'm4a'],
    ['M4B', [...audio, '-c:a', 'aac', '-brand', 'M4B ', '-f', 'ipod'], 'audio/mp4', 'm4a'],
    ['M4V', [...video, '-c:v', 'libx264', '-brand', 'M4V ', '-f', 'mp4'], 'video/x-m4v', 'm4v'],
    ['3GP', [...both, '-c:v', 'h263', '-c:a', 'libopencore_amrnb', '-ar', '8000', '-ac', '1', '-f', '3gp'], 'video/3gpp', '3gp'],
    ['3G2', [...both, '-c:v', 'mpeg4', '-c:a', 'aac', '-f', '3g2'], 'video/3gpp2', '3g2'],
    ['WebM', [...both, '-c:v', 'libvpx', '-c:a', 'libvorbis', '-f', 'webm'], 'video/webm', 'webm'],
    ['Matroska', [...both, '-c:v', 'libx264', '-c:a', 'aac', '-f', 'matroska'], 'video/x-matroska', 'mkv'],
    ['MPEG-TS', [...both, '-c:v', 'libx264', '-c:a', 'aac', '-f', 'mpegts'], 'video/mp2t', 'ts'],
    ['FLV', [...both, '-c:v', 'flv', '-c:a', 'libmp3lame', '-f', 'flv'], 'video/x-flv', 'flv'],
    ['AVI', [...both, '-c:v', 'mpeg4', '-c:a', 'libmp3lame', '-f', 'avi'], 'video/x-msvideo', 'avi'],
    ['Ogg video', [...both, '-c:v', 'libtheora', '-c:a', 'libvorbis', '-f', 'ogg'], 'video/ogg', 'ogv'],
    ['Ogg Vorbis', [...audio, '-c:a', 'libvorbis', '-f', 'ogg'], 'audio/ogg', 'ogg'],
    ['Ogg Opus', [...audio, '-c:a', 'libopus', '-ar', '48000', '-f', 'opus'], 'audio/ogg', 'opus'],
    ['Ogg VP8', [...video, '-c:v', 'libvpx', '-f', 'ogg'], 'application/ogg', 'ogx'],
    ['MP3', [...audio, '-c:a', 'libmp3lame', '-f', 'mp3'], 'audio/mpeg', 'mp3'],
    ['ADTS AAC', [...audio, '-c:a', 'aac', '-f', 'adts'], 'audio/aac', 'aac'],
    ['AC-3', [...audio, '-c:a', 'ac3', '-f', 'ac3'], 'audio/ac3', 'ac3'],
    ['FLAC', [...audio, '-c:a', 'flac', '-f', 'flac'], 'audio/flac', 'flac'],
    ['WAV', [...audio, '-c:a', 'pcm_s16le', '-f', 'wav'], 'audio/wav', 'wav'],
    ['AIFF', [...audio, '-c:a', 'pcm_s16be', '-f', 'aiff'], 'audio/aiff', 'aiff'],
    ['WavPack', [...audio, '-c:a', 'wavpack', '-f', 'wv'], 'audio/wavpack', 'wv'],
    ['AMR', [...audio, '-c:a', 'libopencore_amrnb', '-ar', '8000', '-ac', '1', '-f', 'amr'], 'audio/amr', 'amr'],
    ['VOC', [...audio, '-c:a', 'pcm_u8', '-f', 'voc'], 'audio/x-voc', 'voc'],
    ['MXF', [...video, '-c:v', 'mpeg2video', '-s', '720x576', '-pix_fmt', 'yuv420p', '-f', 'mxf'], 'application/mxf', 'mxf'],
    ['ASF video', [...both, '-c:v', 'wmv2', '-c:a', 'wmav2', '-f', 'asf'], 'video/x-ms-asf', 'asf'],
    ['ASF audio', [...audio, '-c:a', 'wmav2', '-f', 'asf'], 'audio/x-ms-wma', 'wma'],
    ['MPEG-1 program stream', [...both, '-c:v', 'mpeg1video', '-c:a', 'mp2', '-f', 'mpeg'], 'video/mpeg', 'mpg'],
    ['MPEG-2 program stream', [...both, '-c:v', 'mpeg2video', '-c:a', 'mp2', '-f', 'vob'], 'video/mpeg', 'mpg'],
    ['RealMedia', [...both, '-c:v', 'rv10', '-c:a', 'ac3', '-f', 'rm'], 'application/vnd.rn-realmedia', 'rm'],
  ])('when ffmpeg writes %s, then its bytes name a container of the table that ffmpeg reads back', async (name, args, mime, ext) => {
    const file = path.join(dir, name.replaceAll(' ', '-'));
    await runTestFfmpeg([...args, file], { ffmpeg: args.includes('libopencore_amrnb') ? await bundledFfmpeg() : undefined });

    const sniffed = await fileTypeFromFile(file);
    expect(containerOfSniffed(sniffed!.mime)).toMatchObject({ mime, ext });
    // probe forces the table's demuxer: it must find the streams ffmpeg put there.
    const info = await probe({ ffmpeg: await resolveFfmpeg(), file });
    expect(info.streams.length).toBe(args.filter((arg) => arg === 'lavfi').length);
  });

  test.each([
    ['a bare MPEG video stream', ['-f', 'lavfi', '-i', 'testsrc=size=176x144:rate=25:duration=1', '-c:v', 'mpeg1video', '-f', 'mpeg1video']],
    ['a PNG picture', ['-f', 'lavfi', '-i', 'testsrc=size=176x144:rate=25:duration=1', '-frames:v', '1', '-f', 'image2', '-c:v', 'png']],
    ['an HLS playlist', ['-f', 'lavfi', '-i', 'testsrc=size=176x144:rate=25:duration=1', '-f', 'hls']],
  ])('when ffmpeg writes %s, then the table has no container for it', async (name, args) => {
    const file = path.join(dir, `${name.replaceAll(' ', '-')}.out`);
    await runTestFfmpeg([...args, file]);
    const sniffed = await fileTypeFromFile(file);
    expect(sniffed ? containerOfSniffed(sniffed.mime) : null).toBeNull();
  });
});

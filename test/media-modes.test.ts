import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DownloadError } from '../src/core/errors.ts';
import { extractAudio } from '../src/media/audio-only.ts';
import { detectContainer } from '../src/media/detect-container.ts';
import { describe as describeFile } from '../src/media/describe.ts';
import { servedType } from '../src/media/containers.ts';
import { runFfmpeg as runServiceFfmpeg } from '../src/media/ffmpeg.ts';
import { muteVideo } from '../src/media/mute.ts';
import { probe } from '../src/media/probe.ts';
import { remux } from '../src/media/remux.ts';
import { embedSubtitles, MAX_SUBTITLE_BYTES, subtitleFileProblem } from '../src/media/subtitles.ts';
import { bundledFfmpeg, resolveFfmpeg, runFfmpeg, subtitleText } from './support/ffmpeg.ts';

// The ffmpeg side of a download's `mode`, `audio_format` and `subtitles`, run against media that
// the system ffmpeg makes here, with both the ffmpeg the service prefers and the bundled 2018 one.

const MAX_BYTES = 100 * 1024 * 1024;
const signal = new AbortController().signal;

const video = ['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=25:duration=2'];
const sine = (rate: number) => ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=${rate}:duration=2`];
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];

// What the tests read and write, made once: name -> ffmpeg arguments (without the output).
const RECIPES = {
  'h264-aac.mp4': [...video, ...sine(44100), ...x264, '-c:a', 'aac', '-b:a', '64k', '-shortest', '-f', 'mp4'],
  'vp9-opus.webm': [
    ...video,
    ...sine(48000),
    '-c:v',
    'libvpx-vp9',
    '-deadline',
    'realtime',
    '-cpu-used',
    '8',
    '-b:v',
    '200k',
    '-c:a',
    'libopus',
    '-b:a',
    '64k',
    '-shortest',
    '-f',
    'webm',
  ],
  'vp8-vorbis.webm': [...video, ...sine(44100), '-c:v', 'libvpx', '-deadline', 'realtime', '-b:v', '200k', '-c:a', 'libvorbis', '-shortest', '-f', 'webm'],
  'h264-mp3.mkv': [...video, ...sine(44100), ...x264, '-c:a', 'libmp3lame', '-b:a', '64k', '-shortest', '-f', 'matroska'],
  'h264-ac3.mkv': [...video, ...sine(48000), ...x264, '-c:a', 'ac3', '-shortest', '-f', 'matroska'],
  'audio-aac.m4a': [...sine(44100), '-c:a', 'aac', '-b:a', '64k', '-f', 'ipod'],
  'video-only.mp4': [...video, ...x264, '-f', 'mp4'],
} as const;
type MediaName = keyof typeof RECIPES;

const CUES = {
  en: ['Hello world', 'Second cue'],
  de: ['Hallo Welt', 'Zweiter Hinweis'],
  pt: ['Olá mundo', 'Segunda legenda'],
};

function webvtt(lines: readonly string[]): string {
  return `WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${lines[0]}\n\n00:00:01.000 --> 00:00:02.000\n${lines[1]}\n`;
}

let dir: string;
let systemFfmpeg: string;

function media(name: MediaName): string {
  return path.join(dir, 'media', name);
}

/** Size and md5 of each packet of one stream, copied out as they are stored: equal lists are the same stream, whatever the container. */
async function packetHashes(file: string, stream: string): Promise<string[]> {
  const stdout = await runFfmpeg(['-i', file, '-map', `0:${stream}`, '-c', 'copy', '-f', 'framemd5', '-'], { ffmpeg: systemFfmpeg });
  const packets = stdout
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    // stream, dts, pts, duration, size, md5 (side data, such as Opus's skip samples, may follow)
    .map((line) => line.split(',').map((field) => field.trim()))
    .map((fields) => `${fields[4]} ${fields[5]}`);
  expect(packets.length).toBeGreaterThan(10);
  return packets;
}

/** What `ffmpeg -i` prints about a file, to be read here without the service's parser. */
async function ffmpegReport(file: string): Promise<string> {
  return (await runServiceFfmpeg(systemFfmpeg, ['-i', file], { timeLimitMs: 60_000 })).stderr;
}

async function workDir(name: string): Promise<string> {
  return mkdtemp(path.join(dir, `${name}-`));
}

beforeAll(async () => {
  systemFfmpeg = await resolveFfmpeg();
  dir = await mkdtemp(path.join(os.tmpdir(), 'vds-media-modes-'));
  const made = path.join(dir, 'media');
  await mkdir(made);
  // Two at a time: the machine has two cores, and other work runs on it.
  const names = Object.keys(RECIPES) as MediaName[];
  for (let i = 0; i < names.length; i += 2) {
    await Promise.all(names.slice(i, i + 2).map((name) => runFfmpeg([...RECIPES[name], media(name)], { ffmpeg: systemFfmpeg })));
  }
  await writeFile(path.join(made, 'en.vtt'), webvtt(CUES.en));
  await writeFile(path.join(made, 'de.vtt'), webvtt(CUES.de));
  await writeFile(path.join(made, 'pt.vtt'), webvtt(CUES.pt));
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const FFMPEGS: [string, () => Promise<string>][] = [
  ['the ffmpeg the service picks', resolveFfmpeg],
  ['the bundled ffmpeg', bundledFfmpeg],
];

describe.each(FFMPEGS)('with %s', (_name, which) => {
  let ffmpeg: string;

  beforeAll(async () => {
    ffmpeg = await which();
  });

  describe('audio only', () => {
    test.each([
      ['AAC in MP4', 'h264-aac.mp4', 'm4a', 'audio/mp4', 'aac'],
      ['AAC alone in M4A', 'audio-aac.m4a', 'm4a', 'audio/mp4', 'aac'],
      ['Opus in WebM', 'vp9-opus.webm', 'opus', 'audio/ogg', 'opus'],
      ['MP3 in Matroska', 'h264-mp3.mkv', 'mp3', 'audio/mpeg', 'mp3'],
      ['Vorbis in WebM', 'vp8-vorbis.webm', 'ogg', 'audio/ogg', 'vorbis'],
      ['AC-3 in Matroska', 'h264-ac3.mkv', 'mka', 'audio/x-matroska', 'ac3'],
    ] as const)(
      'when the source holds %s (%s) and the format is best, then its audio packets are copied unchanged into .%s (%s) with no other stream',
      async (_what, name, ext, mime, codec) => {
        const work = await workDir('best');
        const output = path.join(work, 'out');

        const result = await extractAudio({ ffmpeg, input: media(name), output, format: 'best', maxBytes: MAX_BYTES, signal });

        expect(result).toEqual({
          path: `${output}.${ext}`,
          ext,
          mime,
          audioCodec: codec,
          reencoded: false,
          info: expect.objectContaining({ codecs: { audioCodec: codec, videoCodec: null, subtitles: [] } }),
        });
        expect(await readdir(work)).toEqual([`out.${ext}`]);
        expect(await packetHashes(result.path, 'a:0')).toEqual(await packetHashes(media(name), 'a:0'));
        const { streams } = await probe({ ffmpeg: systemFfmpeg, file: result.path });
        expect(streams.map((stream) => `${stream.kind}:${stream.codec}`)).toEqual([`audio:${codec}`]);
        // The table takes the file back as what it is said to be, and serves it with its type.
        if (ext !== 'mka') expect(await detectContainer(result.path, null)).toMatchObject({ mime, ext });
        expect(servedType(result.mime)).toBe(mime);
      },
    );

    test.each([
      ['m4a', 'h264-aac.mp4', 'm4a', 'aac'],
      ['opus', 'vp9-opus.webm', 'opus', 'opus'],
      ['mp3', 'h264-mp3.mkv', 'mp3', 'mp3'],
    ] as const)(
      'when the format is %s and the source (%s) already holds the codec it names, then the stream is copied, not re-encoded',
      async (format, name, ext, codec) => {
        const output = path.join(await workDir('same'), 'out');

        const result = await extractAudio({ ffmpeg, input: media(name), output, format, maxBytes: MAX_BYTES, signal });

        expect(result).toMatchObject({ path: `${output}.${ext}`, audioCodec: codec, reencoded: false });
        expect(await packetHashes(result.path, 'a:0')).toEqual(await packetHashes(media(name), 'a:0'));
      },
    );

    test.each([
      ['mp3', 'h264-aac.mp4', 'mp3', 'audio/mpeg', 'mp3'],
      ['opus', 'h264-aac.mp4', 'opus', 'audio/ogg', 'opus'],
      ['m4a', 'vp9-opus.webm', 'm4a', 'audio/mp4', 'aac'],
      ['mp3', 'h264-ac3.mkv', 'mp3', 'audio/mpeg', 'mp3'],
    ] as const)(
      'when the format is %s and the source is %s, then the audio is re-encoded into .%s (%s, %s) of the same length',
      async (format, name, ext, mime, codec) => {
        const output = path.join(await workDir('encode'), 'out');

        const result = await extractAudio({ ffmpeg, input: media(name), output, format, maxBytes: MAX_BYTES, signal });

        expect(result).toEqual({
          path: `${output}.${ext}`,
          ext,
          mime,
          audioCodec: codec,
          reencoded: true,
          info: expect.objectContaining({ codecs: { audioCodec: codec, videoCodec: null, subtitles: [] } }),
        });
        const written = await probe({ ffmpeg: systemFfmpeg, file: result.path });
        expect(written.streams.map(({ kind, codec }) => ({ kind, codec }))).toEqual([{ kind: 'audio', codec }]);
        expect(written.durationSeconds).toBeGreaterThan(1.8);
        expect(written.durationSeconds).toBeLessThan(2.3);
        expect(await detectContainer(result.path, null)).toMatchObject({ mime, ext });
      },
    );

    test('when the source has no audio stream, then extraction is refused as unsupported_source and nothing is written', async () => {
      const work = await workDir('silent');

      const failure = await extractAudio({
        ffmpeg,
        input: media('video-only.mp4'),
        output: path.join(work, 'out'),
        format: 'best',
        maxBytes: MAX_BYTES,
        signal,
      }).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(DownloadError);
      expect(failure).toMatchObject({ code: 'unsupported_source', message: expect.stringMatching(/no audio/) });
      expect(await readdir(work)).toEqual([]);
    });

    test('when the audio would be larger than maxBytes, then extraction fails as source_too_large and leaves nothing behind', async () => {
      const work = await workDir('too-large');

      const failure = await extractAudio({
        ffmpeg,
        input: media('h264-aac.mp4'),
        output: path.join(work, 'out'),
        format: 'best',
        maxBytes: 2_000,
        signal,
      }).catch((error: unknown) => error);

      expect(failure).toMatchObject({ code: 'source_too_large' });
      expect(await readdir(work)).toEqual([]);
    });
  });

  describe('mute', () => {
    test('when an H.264 and AAC MP4 is muted, then an MP4 comes out without audio and with the same video packets', async () => {
      const output = path.join(await workDir('mute'), 'out');

      const result = await muteVideo({ ffmpeg, input: media('h264-aac.mp4'), output, maxBytes: MAX_BYTES, signal });

      const codecs = { audioCodec: null, videoCodec: 'h264', subtitles: [] };
      expect(result).toEqual({ path: `${output}.mp4`, mime: 'video/mp4', ext: 'mp4', info: expect.objectContaining({ codecs, width: 160, height: 120 }) });
      expect((await probe({ ffmpeg: systemFfmpeg, file: result.path })).codecs).toEqual(codecs);
      expect(await packetHashes(result.path, 'v:0')).toEqual(await packetHashes(media('h264-aac.mp4'), 'v:0'));
    });

    test('when the video codec has no place in MP4, then the muted file is Matroska with the same video packets', async () => {
      const output = path.join(await workDir('mute-vp8'), 'out');

      const result = await muteVideo({ ffmpeg, input: media('vp8-vorbis.webm'), output, maxBytes: MAX_BYTES, signal });

      const codecs = { audioCodec: null, videoCodec: 'vp8', subtitles: [] };
      expect(result).toEqual({
        path: `${output}.mkv`,
        mime: 'video/x-matroska',
        ext: 'mkv',
        info: expect.objectContaining({ codecs, width: 160, height: 120 }),
      });
      expect((await probe({ ffmpeg: systemFfmpeg, file: result.path })).codecs).toEqual(codecs);
      expect(await packetHashes(result.path, 'v:0')).toEqual(await packetHashes(media('vp8-vorbis.webm'), 'v:0'));
    });

    test('when the source has no video, then muting is refused as unsupported_source and nothing is written', async () => {
      const work = await workDir('mute-audio');

      const failure = await muteVideo({ ffmpeg, input: media('audio-aac.m4a'), output: path.join(work, 'out'), maxBytes: MAX_BYTES, signal }).catch(
        (error: unknown) => error,
      );

      expect(failure).toMatchObject({ code: 'unsupported_source', message: expect.stringMatching(/no video/) });
      expect(await readdir(work)).toEqual([]);
    });
  });

  describe('subtitles', () => {
    test('when three WebVTT tracks are embedded in an MP4, then each is a mov_text stream with its ISO 639-2 language, label and cues, and video and audio are unchanged', async () => {
      const output = path.join(await workDir('subs'), 'out');
      const tracks = [
        { file: path.join(dir, 'media', 'en.vtt'), language: 'en-US', label: 'English (SDH)' },
        { file: path.join(dir, 'media', 'de.vtt'), language: 'de' },
        { file: path.join(dir, 'media', 'pt.vtt'), language: 'pt-BR', label: 'Português' },
      ];

      const result = await embedSubtitles({ ffmpeg, input: media('h264-aac.mp4'), tracks, output, maxBytes: MAX_BYTES, signal });

      expect(result).toMatchObject({ path: `${output}.mp4`, mime: 'video/mp4', ext: 'mp4', skipped: [] });
      expect(result.subtitles).toEqual([
        { file: tracks[0]!.file, language: 'eng', label: 'English (SDH)' },
        { file: tracks[1]!.file, language: 'deu', label: null },
        { file: tracks[2]!.file, language: 'por', label: 'Português' },
      ]);
      // Read without the service's parser first.
      const report = await ffmpegReport(result.path);
      for (const language of ['eng', 'deu', 'por']) expect(report).toMatch(new RegExp(`Stream #0:\\d+(?:\\[0x\\w+\\])?\\(${language}\\): Subtitle: mov_text`));
      const codecs = {
        audioCodec: 'aac',
        videoCodec: 'h264',
        subtitles: [
          { language: 'eng', label: 'English (SDH)' },
          { language: 'deu', label: null },
          { language: 'por', label: 'Português' },
        ],
      };
      expect((await probe({ ffmpeg: systemFfmpeg, file: result.path })).codecs).toEqual(codecs);
      // What the download reports of the file comes from ffmpeg's own report as it wrote it.
      expect(result.info.codecs).toEqual(codecs);
      expect(await subtitleText(result.path, 0, { ffmpeg: systemFfmpeg })).toMatch(/00:00\.000 --> 00:01\.000\nHello world\n[\s\S]*Second cue/);
      expect(await subtitleText(result.path, 1, { ffmpeg: systemFfmpeg })).toContain('Hallo Welt');
      expect(await subtitleText(result.path, 2, { ffmpeg: systemFfmpeg })).toContain('Olá mundo');
      expect(await packetHashes(result.path, 'v:0')).toEqual(await packetHashes(media('h264-aac.mp4'), 'v:0'));
      expect(await packetHashes(result.path, 'a:0')).toEqual(await packetHashes(media('h264-aac.mp4'), 'a:0'));
    });

    test('when the video has no place in MP4, then the file stays Matroska and the tracks go in as SubRip with their language', async () => {
      const output = path.join(await workDir('subs-mkv'), 'out');
      const tracks = [{ file: path.join(dir, 'media', 'de.vtt'), language: 'de-AT', label: 'Deutsch' }];

      const result = await embedSubtitles({ ffmpeg, input: media('vp8-vorbis.webm'), tracks, output, maxBytes: MAX_BYTES, signal });

      expect(result).toMatchObject({ path: `${output}.mkv`, mime: 'video/x-matroska', subtitles: [{ language: 'deu', label: 'Deutsch' }] });
      // Matroska holds the bibliographic code; the service reports the terminological one.
      expect(await ffmpegReport(result.path)).toMatch(/\(ger\): Subtitle: subrip/);
      const codecs = { audioCodec: 'vorbis', videoCodec: 'vp8', subtitles: [{ language: 'deu', label: 'Deutsch' }] };
      expect((await probe({ ffmpeg: systemFfmpeg, file: result.path })).codecs).toEqual(codecs);
      expect(result.info.codecs).toEqual(codecs);
      expect(await subtitleText(result.path, 0, { ffmpeg: systemFfmpeg })).toContain('Hallo Welt');
      expect(await packetHashes(result.path, 'v:0')).toEqual(await packetHashes(media('vp8-vorbis.webm'), 'v:0'));
    });

    test('when tracks are not WebVTT, too large, hold an over-long cue or one ffmpeg refuses, then they are left out, said why, and the good track is still embedded', async () => {
      const work = await workDir('subs-hostile');
      const write = async (name: string, body: string | Buffer) => {
        const file = path.join(work, name);
        await writeFile(file, body);
        return file;
      };
      const ttml = await write('ttml', '<?xml version="1.0"?><tt xmlns="http://www.w3.org/ns/ttml"><body><div><p begin="0s" end="1s">Hi</p></div></body></tt>');
      const playlist = await write('playlist', `#EXTM3U\n#EXTINF:1,\nfile://${media('h264-aac.mp4')}\n`);
      const cue = '00:00:00.000 --> 00:00:01.000\nline\n\n';
      const huge = await write('huge.vtt', `WEBVTT\n\n${cue.repeat(Math.ceil(MAX_SUBTITLE_BYTES / cue.length))}`);
      expect((await stat(huge)).size).toBeGreaterThan(MAX_SUBTITLE_BYTES);
      const longCue = await write('long.vtt', `WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${'x'.repeat(70_000)}\n`);
      // Every check passes, but the MP4 muxer refuses the cue's negative duration.
      const backwards = await write('backwards.vtt', 'WEBVTT\n\n00:00:01.000 --> 00:00:00.000\nbackwards\n');
      const latin1 = await write('latin1.vtt', Buffer.from('WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nOl\xe1\n', 'latin1'));
      const missing = path.join(work, 'missing.vtt');
      const good = path.join(dir, 'media', 'en.vtt');
      const output = path.join(work, 'out');

      const result = await embedSubtitles({
        ffmpeg,
        input: media('h264-aac.mp4'),
        tracks: [ttml, playlist, huge, longCue, backwards, latin1, missing, good].map((file) => ({ file, language: 'en' })),
        output,
        maxBytes: MAX_BYTES,
        signal,
      });

      expect(result.skipped).toEqual([
        { file: ttml, reason: 'not a WebVTT file' },
        { file: playlist, reason: 'not a WebVTT file' },
        { file: huge, reason: `larger than ${MAX_SUBTITLE_BYTES} bytes` },
        { file: longCue, reason: expect.stringMatching(/^a block longer than/) },
        { file: latin1, reason: 'not UTF-8 text' },
        { file: missing, reason: 'not a regular file' },
        { file: backwards, reason: expect.stringMatching(/^ffmpeg could not write it: ./) },
      ]);
      expect(result.subtitles).toEqual([{ file: good, language: 'eng', label: null }]);
      expect((await probe({ ffmpeg: systemFfmpeg, file: result.path })).codecs.subtitles).toEqual([{ language: 'eng', label: null }]);
      expect(await subtitleText(result.path, 0, { ffmpeg: systemFfmpeg })).toContain('Hello world');
      expect((await readdir(work)).sort()).toEqual(['backwards.vtt', 'huge.vtt', 'latin1.vtt', 'long.vtt', 'out.mp4', 'playlist', 'ttml']);
    });

    test('when a cue starts long after the video ends, then it is dropped and the file keeps the length of its video', async () => {
      const work = await workDir('subs-late');
      const late = path.join(work, 'late.vtt');
      await writeFile(late, 'WEBVTT\n\n00:00:00.500 --> 00:00:01.000\nearly\n\n99:00:00.000 --> 99:00:01.000\nlate\n');

      const result = await embedSubtitles({
        ffmpeg,
        input: media('h264-aac.mp4'),
        tracks: [{ file: late, language: 'en' }],
        output: path.join(work, 'out'),
        maxBytes: MAX_BYTES,
        signal,
      });

      const text = await subtitleText(result.path, 0, { ffmpeg: systemFfmpeg });
      expect(text).toContain('early');
      expect(text).not.toContain('late');
      const info = await probe({ ffmpeg: systemFfmpeg, file: result.path });
      expect(info.durationSeconds).toBeLessThan(2.5);
    });
  });
});

describe('codecs of a file', () => {
  test('when a muxed file and an audio-only file are read, then their audio and video codecs are named and the absent one is null', async () => {
    expect((await probe({ ffmpeg: systemFfmpeg, file: media('h264-aac.mp4') })).codecs).toEqual({ audioCodec: 'aac', videoCodec: 'h264', subtitles: [] });
    expect((await probe({ ffmpeg: systemFfmpeg, file: media('vp9-opus.webm') })).codecs).toEqual({ audioCodec: 'opus', videoCodec: 'vp9', subtitles: [] });
    expect((await probe({ ffmpeg: systemFfmpeg, file: media('audio-aac.m4a') })).codecs).toEqual({ audioCodec: 'aac', videoCodec: null, subtitles: [] });
  });

  test.each(FFMPEGS)(
    'when %s remuxes a transport stream, then what it said as it wrote the MP4 describes it as a probe of it does, with its size and hash',
    async (name, which) => {
      const work = await workDir(`described-${name.replaceAll(' ', '-')}`);
      // ADTS AAC, as MPEG-TS carries it: the ffmpeg must make it MP4's form without being told.
      const ts = path.join(work, 'in.ts');
      await runFfmpeg(['-i', media('h264-aac.mp4'), '-c', 'copy', '-f', 'mpegts', ts], { ffmpeg: systemFfmpeg });
      const written = await remux({ ffmpeg: await which(), inputs: [ts], output: path.join(work, 'out'), maxBytes: MAX_BYTES, signal });

      const described = await describeFile(written, signal);
      const probed = await probe({ ffmpeg: systemFfmpeg, file: written.path });
      expect(described).toMatchObject({
        path: written.path,
        mime: 'video/mp4',
        ext: 'mp4',
        width: 160,
        height: 120,
        sizeBytes: (await stat(written.path)).size,
      });
      expect(described.codecs).toEqual({ audioCodec: 'aac', videoCodec: 'h264', subtitles: [] });
      expect(described.codecs).toEqual(probed.codecs);
      expect(described.durationSeconds).toBeGreaterThan(1.9);
      expect(Math.abs(described.durationSeconds! - probed.durationSeconds!)).toBeLessThan(0.05);
      expect(described.sha256).toBe(
        createHash('sha256')
          .update(await readFile(written.path))
          .digest('hex'),
      );
      expect(await packetHashes(written.path, 'a:0')).toEqual(await packetHashes(media('h264-aac.mp4'), 'a:0'));
    },
  );

  test('when the input is not media, then reading its codecs is refused as unsupported_source', async () => {
    const file = path.join(await workDir('not-media'), 'list');
    await writeFile(file, `ffconcat version 1.0\nfile '${media('h264-aac.mp4')}'\n`);
    await expect(probe({ ffmpeg: systemFfmpeg, file })).rejects.toMatchObject({ code: 'unsupported_source' });
  });
});

describe('subtitle file checks', () => {
  test.each([
    ['a WebVTT file', null, 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nHi\n'],
    ['a WebVTT file with a BOM and a header text', null, '\uFEFFWEBVTT - Some title\r\n\r\n00:00.000 --> 00:01.000\r\nHi\r\n'],
    ['a header that only starts like WebVTT', 'not a WebVTT file', 'WEBVTTX\n'],
    ['an SRT file', 'not a WebVTT file', '1\n00:00:00,000 --> 00:00:01,000\nHi\n'],
    ['an empty file', 'not a WebVTT file', ''],
  ])('when the file is %s, then the check says %j', async (_what, problem, body) => {
    const file = path.join(await workDir('check'), 'track');
    await writeFile(file, body);
    expect(await subtitleFileProblem(file)).toBe(problem);
  });
});

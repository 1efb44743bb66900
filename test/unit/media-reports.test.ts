import { codecsOf, parseStreams, reportedDuration } from '../../src/media/codecs.ts';
import { iso639_2 } from '../../src/media/languages.ts';

// What the service reads from ffmpeg's reports and from language tags, on text alone.

describe('codecs of a file', () => {
  test("when ffmpeg 4's and ffmpeg 5's reports are parsed, then languages, labels and cover pictures are read, and default handler names are no label", () => {
    const ffmpeg5 = [
      "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'file:/tmp/x.mp4':",
      '  Metadata:',
      '    title           : Not a stream',
      '    Stream #0:9(eng): Video: h265, 7777x5555: tags read like ffmpeg',
      '    Duration: 09:09:09.00, x: y',
      '  Duration: 00:00:02.00, start: 0.000000, bitrate: 174 kb/s',
      '  Chapters:',
      '    Chapter #0:0: start 0.000000, end 1.000000',
      '      Metadata:',
      '        title           : Stream #0:8: Audio: mp3',
      '  Stream #0:0[0x1](und): Video: h264 (Constrained Baseline) (avc1 / 0x31637661), yuv420p(progressive), 160x120, 25 fps (default)',
      '    Metadata:',
      '      handler_name    : VideoHandler',
      '  Stream #0:1[0x2](ger): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, mono, fltp, 65 kb/s (default)',
      '  Stream #0:2[0x3](por): Subtitle: mov_text (tx3g / 0x67337874), 0 kb/s',
      '    Metadata:',
      '      handler_name    : Português',
      '                      : Stream #0:9(eng): Subtitle: mov_text',
      '  Stream #0:3[0x4](und): Subtitle: mov_text (tx3g / 0x67337874), 0 kb/s',
      '    Metadata:',
      '      handler_name    : SubtitleHandler',
      '  Stream #0:4[0x0]: Video: mjpeg (Baseline), yuvj444p(pc), 64x64, 90k tbn (attached pic)',
      'At least one output file must be specified',
      '  Stream #0:5(eng): Subtitle: mov_text',
    ].join('\n');
    const streams = parseStreams(ffmpeg5);
    expect(streams.map((stream) => [stream.kind, stream.codec, stream.language, stream.label, stream.attachedPicture])).toEqual([
      ['video', 'h264', null, null, false],
      ['audio', 'aac', 'deu', null, false],
      ['subtitle', 'mov_text', 'por', 'Português', false],
      ['subtitle', 'mov_text', null, null, false],
      ['video', 'mjpeg', null, null, true],
    ]);

    expect(reportedDuration(ffmpeg5, 'Input #0')).toBe(2);

    // ffmpeg 4 indents streams as deep as the file's tags.
    const ffmpeg4 = [
      "Input #0, matroska,webm, from 'file:/tmp/x.mkv':",
      '  Metadata:',
      '    Stream #0:7: Video: h265, 7777x5555: tags read like ffmpeg',
      '  Duration: 00:00:02.02, start: 0.000000, bitrate: 172 kb/s',
      '    Stream #0:0: Audio: mjpeg, 64x64',
      '    Stream #0:1(eng): Subtitle: subrip (default)',
      '    Metadata:',
      '      title           : English\u0007 (SDH)',
      '      handler_name    : ignored, title wins',
      '    Stream #0:2(x): Video: h264',
      '    Stream #0:3(eng\u0000): Subtitle: ass',
      '    Stream #0:4(a)b): Audio: aac (LC), 44100 Hz',
    ].join('\n');
    expect(codecsOf(parseStreams(ffmpeg4))).toEqual({
      audioCodec: 'mjpeg',
      videoCodec: 'h264',
      subtitles: [
        { language: 'eng', label: 'English (SDH)' },
        { language: null, label: null },
      ],
    });
    expect(parseStreams(ffmpeg4).map((stream) => [stream.kind, stream.codec, stream.language])).toEqual([
      ['audio', 'mjpeg', null],
      ['subtitle', 'subrip', 'eng'],
      ['video', 'h264', null],
      ['subtitle', 'ass', null],
      ['audio', 'aac', null],
    ]);
    expect(parseStreams('no input here')).toEqual([]);
  });
});

describe('language tags', () => {
  test.each([
    ['en', 'eng', 'eng'],
    ['en-US', 'eng', 'eng'],
    ['EN_gb', 'eng', 'eng'],
    ['pt-BR', 'por', 'por'],
    ['de', 'deu', 'ger'],
    ['de-AT', 'deu', 'ger'],
    ['fr-CA', 'fra', 'fre'],
    ['ja', 'jpn', 'jpn'],
    ['zh-Hans', 'zho', 'chi'],
    ['zh-Hant-TW', 'zho', 'chi'],
    ['zh-yue', 'yue', 'yue'],
    ['es-419', 'spa', 'spa'],
    ['iw', 'heb', 'heb'],
    ['fil', 'fil', 'fil'],
    ['ger', 'deu', 'ger'],
    ['deu', 'deu', 'ger'],
    ['x-klingon', 'und', 'und'],
    ['i-klingon', 'und', 'und'],
    ['qq', 'und', 'und'],
    ['', 'und', 'und'],
    ['english', 'und', 'und'],
  ])('when the tag is %j, then its ISO 639-2 code is %s (%s in the bibliographic form)', (tag, terminological, bibliographic) => {
    expect(iso639_2(tag)).toBe(terminological);
    expect(iso639_2(tag, 'B')).toBe(bibliographic);
  });
});

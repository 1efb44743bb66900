import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bodyJson, savedFile, type Download } from './support/api.ts';
import { runFfmpeg, subtitleText } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { dashFixtures, serveDashFixture, type DashFixture } from './support/streams/dash-fixtures.ts';
import { prepareHlsFixtures, serveHlsFixture, type HlsFixtures } from './support/streams/hls-fixtures.ts';

// mode and audio_format through the API, on media made by ffmpeg: the file holds what was asked
// for, copied where it can be (packet for packet), and nothing the mode throws away is fetched.

const { app, source } = useService();
let hls: HlsFixtures;
let dash: Record<string, DashFixture>;
let scratch: string;

beforeAll(async () => {
  [hls, dash] = await Promise.all([prepareHlsFixtures(), dashFixtures()]);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-modes-'));
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function download(body: Record<string, unknown>): Promise<Download> {
  const created = await app.http.createDownload(body);
  expect(created.status).toBe(202);
  const done = await app.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
  expect(done).toMatchObject({ status: 'completed', error: null });
  return done;
}

/** The file of a completed download, on disk. */
function fileOf(done: Download): Promise<string> {
  return savedFile(app.http, done, scratch);
}

/** The md5 of every packet of the first stream of a kind, as stored (no decoding): equal lists are a copy. */
async function packets(file: string, kind: 'a' | 'v'): Promise<string[]> {
  const text = (await runFfmpeg(['-i', file, '-map', `0:${kind}:0`, '-c', 'copy', '-f', 'framemd5', '-'])).toString('utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    .map((line) => line.split(',').at(-1)!.trim());
}

describe('a direct file', () => {
  test('when only the audio is asked for, then the file is its AAC as .m4a, packet for packet, and the download says so', async () => {
    const done = await download({ url: source.file('/direct/clip.mp4', mediaPath('clip.mp4')), mode: 'audio' });
    expect(done).toMatchObject({ mode: 'audio', audio_format: 'best', subtitles: [] });
    expect(done.file).toMatchObject({ content_type: 'audio/mp4', filename: 'clip.m4a', audio_codec: 'aac', video_codec: null, width: null, height: null });
    const file = await fileOf(done);
    expect(await packets(file, 'a')).toEqual(await packets(mediaPath('clip.mp4'), 'a'));
    const res = await app.http.getFile(done.download_url!);
    expect(res.headers['content-type']).toBe('audio/mp4');
  });

  test('when the audio is asked for as mp3, then it is re-encoded to an .mp3', async () => {
    const done = await download({ url: source.file('/direct/for-mp3.mp4', mediaPath('clip.mp4')), mode: 'audio', audio_format: 'mp3' });
    expect(done.file).toMatchObject({ content_type: 'audio/mpeg', filename: 'for-mp3.mp3', audio_codec: 'mp3', video_codec: null });
  });

  test('when the picture only is asked for, then the file has no sound and the same video packets', async () => {
    const done = await download({ url: source.file('/direct/mute.mp4', mediaPath('clip.mp4')), mode: 'mute' });
    expect(done).toMatchObject({ mode: 'mute', audio_format: null });
    expect(done.file).toMatchObject({ content_type: 'video/mp4', audio_codec: null, video_codec: 'h264' });
    const file = await fileOf(done);
    expect(await packets(file, 'v')).toEqual(await packets(mediaPath('clip.mp4'), 'v'));
  });
});

describe('an HLS master with separate audio renditions', () => {
  test('when only the audio is asked for, then no video playlist or segment is requested', async () => {
    const url = serveHlsFixture(source, hls['audio-rendition'], '/hls-audio');
    const done = await download({ url, mode: 'audio' });
    expect(done.file).toMatchObject({ content_type: 'audio/mp4', audio_codec: 'aac', video_codec: null });
    expect(source.requestsFor('/hls-audio/video/index.m3u8')).toHaveLength(0);
    expect(source.requestsFor('/hls-audio/video/seg0.ts')).toHaveLength(0);
    expect(source.requestsFor('/hls-audio/audio-de/seg0.ts').length).toBeGreaterThan(0);
  });

  test('when the picture only is asked for, then no audio playlist or segment is requested', async () => {
    const url = serveHlsFixture(source, hls['audio-rendition'], '/hls-mute');
    const done = await download({ url, mode: 'mute' });
    expect(done.file).toMatchObject({ audio_codec: null, video_codec: 'h264' });
    for (const language of ['en', 'de']) expect(source.requestsFor(`/hls-mute/audio-${language}/index.m3u8`)).toHaveLength(0);
    expect(source.requestsFor('/hls-mute/video/seg0.ts').length).toBeGreaterThan(0);
  });
});

describe('a DASH manifest with a separate audio set', () => {
  test('when only the audio is asked for, then no video segment is requested, and the audio is copied', async () => {
    const url = serveDashFixture(source, dash.multi!, '/dash-audio');
    const done = await download({ url, mode: 'audio', audio_format: 'm4a' });
    expect(done.file).toMatchObject({ content_type: 'audio/mp4', audio_codec: 'aac', video_codec: null });
    for (const stream of [0, 1, 2]) {
      expect(source.requestsFor(`/dash-audio/init-stream${stream}.m4s`)).toHaveLength(0);
      expect(source.requestsFor(`/dash-audio/chunk-stream${stream}-00001.m4s`)).toHaveLength(0);
    }
    expect(source.requestsFor('/dash-audio/chunk-stream3-00001.m4s').length).toBeGreaterThan(0);
  });

  test('when the picture only is asked for, then no audio segment is requested', async () => {
    const url = serveDashFixture(source, dash.multi!, '/dash-mute');
    const done = await download({ url, mode: 'mute' });
    expect(done.file).toMatchObject({ audio_codec: null, video_codec: 'h264' });
    expect(source.requestsFor('/dash-mute/init-stream3.m4s')).toHaveLength(0);
    expect(source.requestsFor('/dash-mute/chunk-stream3-00001.m4s')).toHaveLength(0);
  });
});

describe('subtitles', () => {
  /** The `ts` stream behind a master that offers English and German WebVTT subtitles, the English in two segments. */
  function masterWithSubtitles(prefix: string): string {
    serveHlsFixture(source, hls.ts, prefix);
    const vttPlaylist = (segments: string[]) =>
      ['#EXTM3U', '#EXT-X-TARGETDURATION:2', '#EXT-X-PLAYLIST-TYPE:VOD', ...segments.flatMap((segment) => ['#EXTINF:2,', segment]), '#EXT-X-ENDLIST', ''].join(
        '\n',
      );
    source.content(`${prefix}/subs/en.m3u8`, vttPlaylist(['en0.vtt', 'en1.vtt']), { contentType: 'application/vnd.apple.mpegurl' });
    source.content(`${prefix}/subs/de.m3u8`, vttPlaylist(['de0.vtt']), { contentType: 'application/vnd.apple.mpegurl' });
    source.content(`${prefix}/subs/en0.vtt`, 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nHello from the first segment\n', { contentType: 'text/vtt' });
    source.content(`${prefix}/subs/en1.vtt`, 'WEBVTT\n\n00:00:02.000 --> 00:00:03.000\nAnd from the second\n', { contentType: 'text/vtt' });
    source.content(`${prefix}/subs/de0.vtt`, 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nHallo\n', { contentType: 'text/vtt' });
    const master = [
      '#EXTM3U',
      '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en-US",URI="subs/en.m3u8"',
      '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Deutsch",LANGUAGE="de",URI="subs/de.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,SUBTITLES="subs"',
      'index.m3u8',
      '',
    ].join('\n');
    return source.content(`${prefix}/master.m3u8`, master, { contentType: 'application/vnd.apple.mpegurl' });
  }

  /** The text of the file's subtitle stream `index`, as WebVTT. */
  test('when English subtitles are asked for from an HLS master, then its English track is embedded whole with its language, and the German one is not fetched', async () => {
    const url = masterWithSubtitles('/subs-en');
    const done = await download({ url, subtitles: ['en'] });
    expect(done.subtitles).toEqual(['en']);
    expect(done.file).toMatchObject({ content_type: 'video/mp4', subtitles: [{ language: 'eng', label: 'English' }] });
    const text = await subtitleText(await fileOf(done), 0);
    expect(text).toContain('Hello from the first segment');
    expect(text).toContain('And from the second');
    expect(source.requestsFor('/subs-en/subs/de.m3u8')).toHaveLength(0);
  });

  test("when a page's video has a captions track in the language asked for, then it is embedded with its label", async () => {
    const media = source.file('/page-subs/clip.mp4', mediaPath('clip.mp4'));
    source.content('/page-subs/de.vtt', 'WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nGuten Tag\n', { contentType: 'text/vtt' });
    const html = `<!doctype html><html><head><title>Untertitel</title></head><body><video src="${media}"><track kind="captions" srclang="de-DE" label="Deutsch" src="de.vtt"></video></body></html>`;
    const done = await download({ url: source.content('/page-subs/watch.html', html), subtitles: ['de'] });
    expect(done.file).toMatchObject({ filename: 'Untertitel.mp4', subtitles: [{ language: 'deu', label: 'Deutsch' }] });
    expect(await subtitleText(await fileOf(done), 0)).toContain('Guten Tag');
  });

  test('when a DASH manifest has a WebVTT text set in the language asked for, then it is embedded', async () => {
    serveDashFixture(source, dash.multi!, '/dash-subs');
    const manifest = await readFile(dash.multi!.manifest, 'utf8');
    const text =
      '<AdaptationSet contentType="text" mimeType="text/vtt" lang="pt-BR"><Label>Português</Label><Representation id="pt" bandwidth="256"><BaseURL>subs/pt.vtt</BaseURL></Representation></AdaptationSet>';
    source.content('/dash-subs/subs/pt.vtt', 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nOlá\n', { contentType: 'text/vtt' });
    const url = source.content('/dash-subs/with-text.mpd', manifest.replace('</Period>', `${text}</Period>`), { contentType: 'application/dash+xml' });
    const done = await download({ url, subtitles: ['pt'] });
    expect(done.file).toMatchObject({ subtitles: [{ language: 'por', label: 'Português' }] });
    expect(await subtitleText(await fileOf(done), 0)).toContain('Olá');
  });

  test('when a DASH manifest has a TTML text set, then its cues are converted to WebVTT in the sandbox and embedded', async () => {
    serveDashFixture(source, dash.multi!, '/dash-ttml');
    const manifest = await readFile(dash.multi!.manifest, 'utf8');
    const text =
      '<AdaptationSet contentType="text" mimeType="application/ttml+xml" lang="fr"><Label>Français</Label><Representation id="fr" bandwidth="256"><BaseURL>subs/fr.ttml</BaseURL></Representation></AdaptationSet>';
    const ttml =
      '<?xml version="1.0" encoding="UTF-8"?><tt xmlns="http://www.w3.org/ns/ttml" xml:lang="fr"><body><div><p begin="00:00:00.500" end="00:00:01.500">Bonjour<br/>le monde</p></div></body></tt>';
    source.content('/dash-ttml/subs/fr.ttml', ttml, { contentType: 'application/ttml+xml' });
    const url = source.content('/dash-ttml/with-ttml.mpd', manifest.replace('</Period>', `${text}</Period>`), { contentType: 'application/dash+xml' });
    const done = await download({ url, subtitles: ['fr'] });
    expect(done.file).toMatchObject({ subtitles: [{ language: 'fra', label: 'Français' }] });
    const vtt = await subtitleText(await fileOf(done), 0);
    expect(vtt).toContain('Bonjour');
    expect(vtt).toContain('le monde');
  });

  test('when a cue holds NUL, escapes and a direction override, then they are taken out and every cue survives', async () => {
    const media = source.file('/page-nul/clip.mp4', mediaPath('clip.mp4'));
    const vtt = 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nfirst \u0000 one \u001b[31mred\u202e\n\n00:00:01.000 --> 00:00:02.000\nsecond cue\n';
    source.content('/page-nul/en.vtt', vtt, { contentType: 'text/vtt' });
    const html = `<!doctype html><html><body><video src="${media}"><track srclang="en" src="en.vtt"></video></body></html>`;
    const done = await download({ url: source.content('/page-nul/watch.html', html), subtitles: ['en'] });
    const text = await subtitleText(await fileOf(done), 0);
    expect(text).toContain('second cue');
    expect(text).toContain('first  one [31mred');
    expect(text).not.toMatch(/[\u0000\u001b\u202e]/);
  });

  test('when all subtitles are asked for, then every track is embedded; a language the source lacks is no error', async () => {
    const all = await download({ url: masterWithSubtitles('/subs-all'), subtitles: ['all'] });
    expect(all.file!.subtitles.map((track) => track.language).sort()).toEqual(['deu', 'eng']);
    const none = await download({ url: masterWithSubtitles('/subs-ja'), subtitles: ['ja'] });
    expect(none.file!.subtitles).toEqual([]);
    expect(source.requestsFor('/subs-ja/subs/en.m3u8')).toHaveLength(0);
  });
});

describe('requests that make no sense', () => {
  test.each([
    ['audio_format without mode audio', { audio_format: 'mp3' }, '/body/audio_format'],
    ['audio_format with mode mute', { mode: 'mute', audio_format: 'opus' }, '/body/audio_format'],
    ['an unknown mode', { mode: 'karaoke' }, '/body/mode'],
    ['an unknown audio format', { mode: 'audio', audio_format: 'flac' }, '/body/audio_format'],
    ['"all" beside a language', { subtitles: ['all', 'en'] }, '/body/subtitles'],
    ['a subtitle language that is no tag', { subtitles: ['english please'] }, '/body/subtitles/0'],
  ])('when a create has %s, then 400 naming the field, and nothing is created', async (_case, fields, field) => {
    const before = (await app.http.request('GET', '/downloads?limit=100', '/downloads')).body as { items: Download[] };
    const res = await app.http.createDownload({ url: 'https://media.example.com/a.mp4', ...fields });
    expect(res.status).toBe(400);
    expect(bodyJson<{ errors: { field: string }[] }>(res).errors.map((error) => error.field)).toContain(field);
    const after = (await app.http.request('GET', '/downloads?limit=100', '/downloads')).body as { items: Download[] };
    expect(after.items).toHaveLength(before.items.length);
  });
});

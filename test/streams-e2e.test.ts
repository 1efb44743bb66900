import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { savedFile, type Download } from './support/api.ts';
import { frameHashes } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { dashFixtures, serveDashFixture, type DashFixture } from './support/streams/dash-fixtures.ts';
import { prepareHlsFixtures, serveHlsFixture, type HlsFixtures } from './support/streams/hls-fixtures.ts';

// Every kind of source through the public API, down to the pictures: the file handed back must
// decode to exactly the frames of the stream it came from.

const FPS = 25;

const { app, source } = useService();
let hls: HlsFixtures;
let dash: Record<string, DashFixture>;
let scratch: string;

beforeAll(async () => {
  [hls, dash] = await Promise.all([prepareHlsFixtures(), dashFixtures()]);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-e2e-'));
}, 120_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function download(url: string, extra: Record<string, unknown> = {}): Promise<Download> {
  const created = await app.http.createDownload({ url, ...extra });
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
}

/** The completed download's file, fetched through its download_url, on disk for ffmpeg. */
function fetched(done: Download): Promise<string> {
  expect(done).toMatchObject({ status: 'completed', error: null });
  return savedFile(app.http, done, scratch);
}

/** The segments a media playlist lists, joined in order (after its init section): the stream as one file. */
async function joinedStream(dir: string, playlist: string, init?: string): Promise<string> {
  const text = await readFile(path.join(dir, playlist), 'utf8');
  const uris = [...new Set(text.split('\n').filter((line) => line.trim() && !line.startsWith('#')))];
  const parts = await Promise.all([...(init ? [init] : []), ...uris].map((uri) => readFile(path.join(dir, path.dirname(playlist), uri))));
  const file = path.join(scratch, `${path.basename(dir)}-${playlist.replaceAll('/', '_')}.joined`);
  await writeFile(file, Buffer.concat(parts));
  return file;
}

async function expectSameVideo(done: Download, reference: string): Promise<void> {
  const output = await fetched(done);
  const expected = await frameHashes(reference);
  expect(expected.length).toBeGreaterThan(0);
  expect(await frameHashes(output)).toEqual(expected);
  expect(done.file!.duration_seconds).toBeCloseTo(expected.length / FPS, 1);
}

describe('HLS', () => {
  test('when the URL is an MPEG-TS media playlist, then the MP4 has the same frames and duration', async () => {
    const done = await download(serveHlsFixture(source, hls.ts, '/hls/ts'));
    expect(done.file).toMatchObject({ content_type: 'video/mp4', filename: 'index.mp4', width: 320, height: 180 });
    expect(done.source).toEqual({ kind: 'hls', extractor: null, title: null });
    await expectSameVideo(done, await joinedStream(hls.ts.dir, hls.ts.playlist));
    // Remuxed, never re-encoded: the audio survives too.
    expect((await frameHashes(await fetched(done), 'a')).length).toBeGreaterThan(0);
  });

  test.each(['aes-iv', 'aes-sequence'] as const)('when the playlist is AES-128 encrypted (%s), then it is decrypted to the clear frames', async (name) => {
    const done = await download(serveHlsFixture(source, hls[name], `/hls/${name}`));
    await expectSameVideo(done, await joinedStream(hls.ts.dir, hls.ts.playlist));
  });

  test('when the segments are fragmented MP4 with an EXT-X-MAP, then the init section leads the file', async () => {
    const done = await download(serveHlsFixture(source, hls.fmp4, '/hls/fmp4'));
    await expectSameVideo(done, await joinedStream(hls.fmp4.dir, hls.fmp4.playlist, 'init.mp4'));
  });

  test('when the playlist addresses one file by byte ranges, then the ranges make the whole stream', async () => {
    const done = await download(serveHlsFixture(source, hls['single-file'], '/hls/single'));
    await expectSameVideo(done, path.join(hls['single-file'].dir, 'media.ts'));
    expect(source.requestsFor('/hls/single/media.ts').every((request) => /^bytes=\d+-\d+$/.test(request.range ?? ''))).toBe(true);
  });

  test.each([
    ['best', 'v720', 1280, 720],
    [360, 'v360', 640, 360],
    ['worst', 'v180', 320, 180],
  ] as const)('when a master playlist is asked for quality %p, then that variant is downloaded', async (quality, dir, width, height) => {
    const done = await download(serveHlsFixture(source, hls.master, '/hls/master'), { quality });
    expect(done.file).toMatchObject({ width, height });
    await expectSameVideo(done, await joinedStream(hls.master.dir, `${dir}/index.m3u8`));
  });

  test('when the variant has a separate audio rendition, then video and the default audio are merged', async () => {
    const fixture = hls['audio-rendition'];
    const done = await download(serveHlsFixture(source, fixture, '/hls/audio'));
    const output = await fetched(done);
    expect(await frameHashes(output)).toEqual(await frameHashes(await joinedStream(fixture.dir, 'video/index.m3u8')));
    expect(await frameHashes(output, 'a')).toEqual(await frameHashes(await joinedStream(fixture.dir, 'audio-de/index.m3u8'), 'a'));
  });

  test('when the playlist is live, then the download fails as unsupported_source saying so', async () => {
    const live = '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\nseg0.ts\n';
    const done = await download(source.content('/hls/live/index.m3u8', live));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source' } });
    expect(done.error!.message).toMatch(/live/i);
  });

  test('when the playlist uses SAMPLE-AES, then the download fails as drm_protected', async () => {
    const drm = '#EXTM3U\n#EXT-X-VERSION:5\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key"\n#EXTINF:1.0,\nseg0.ts\n#EXT-X-ENDLIST\n';
    const done = await download(source.content('/hls/drm/index.m3u8', drm));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'drm_protected', retryable: false } });
  });
});

describe('DASH', () => {
  test.each(['time', 'number', 'list', 'list-ranges', 'base', 'muxed'])(
    'when the MPD is the %s kind, then video and audio are merged with the same frames',
    async (name) => {
      const fixture = dash[name]!;
      const done = await download(serveDashFixture(source, fixture, `/dash/${name}`));
      expect(done.file).toMatchObject({ content_type: 'video/mp4', width: 320, height: 240 });
      await expectSameVideo(done, fixture.videoSources[240]!);
      expect((await frameHashes(await fetched(done), 'a')).length).toBeGreaterThan(0);
    },
  );

  test('when the MPD offers several heights, then quality picks one', async () => {
    const fixture = dash.multi!;
    const done = await download(serveDashFixture(source, fixture, '/dash/multi'), { quality: 300 });
    expect(done.file).toMatchObject({ height: 240 });
    await expectSameVideo(done, fixture.videoSources[240]!);
  });
});

describe('web pages', () => {
  const page = (head: string, body = '') => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;

  test.each([
    ['a <video> element', (media: string) => page('<title>Video element</title>', `<video controls src="${media}"></video>`), 'Video element'],
    ['og:video', (media: string) => page(`<meta property="og:title" content="Open Graph"><meta property="og:video" content="${media}">`), 'Open Graph'],
    ['twitter:player:stream', (media: string) => page(`<title>Card</title><meta name="twitter:player:stream" content="${media}">`), 'Card'],
    [
      'JSON-LD VideoObject',
      (media: string) =>
        page(
          `<title>Linked data</title><script type="application/ld+json">{"@context":"https://schema.org","@type":"VideoObject","contentUrl":"${media}"}</script>`,
        ),
      'Linked data',
    ],
  ])('when the page carries its video in %s, then that video is downloaded under the page title', async (_kind, html, title) => {
    const media = source.file('/pages/media/clip.mp4', mediaPath('clip.mp4'));
    const url = source.content(`/pages/${encodeURIComponent(title)}.html`, html(media));
    const done = await download(url);
    expect(done.file).toMatchObject({ filename: `${title}.mp4`, content_type: 'video/mp4' });
    expect(done.source).toEqual({ kind: 'page', extractor: null, title });
    await expectSameVideo(done, mediaPath('clip.mp4'));
  });

  test('when a script in the page names an HLS playlist, then the stream is downloaded', async () => {
    const playlist = serveHlsFixture(source, hls.ts, '/pages/hls');
    const url = source.content(
      '/pages/player.html',
      page('<title>Player</title>', `<script>var config = {"src": "${playlist.replaceAll('/', '\\/')}"};</script>`),
    );
    const done = await download(url);
    await expectSameVideo(done, await joinedStream(hls.ts.dir, hls.ts.playlist));
  });

  test('when the page has no media, then the download fails as unsupported_source', async () => {
    const url = source.content('/pages/empty.html', page('<title>Nothing</title>', '<p>No video here.</p>'));
    const done = await download(url);
    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'unsupported_source', retryable: false } });
    // The last reader asked for it was the site's, which this service (started without yt-dlp) has none of.
    expect(done.error!.message).toMatch(/installing yt-dlp/);
  });
});

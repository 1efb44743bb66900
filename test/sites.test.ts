import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { startTestService, type Download, type TestService } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { prepareHlsFixtures, serveHlsFixture, type HlsFixtures } from './support/streams/hls-fixtures.ts';
import { waitFor } from './support/waiting.ts';

// Site pages through Debian's yt-dlp, for real: pages that only yt-dlp's generic extractor reads
// (a JW Player set-up script, a meta refresh), extracted through the service's proxy and fetched by
// the service's own readers. These need yt-dlp on PATH, and fail (never skip) without it.

const { app, source } = useService({ ytdlp: 'on', ytdlpTimeoutSeconds: 20, maxAttempts: 1 });
let hls: HlsFixtures;

const page = (head: string, body = '') => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;
const jwPlayer = (title: string, file: string) =>
  page(`<title>${title}</title>`, `<div id="player"></div><script>jwplayer("player").setup({file: "${file}"});</script>`);

beforeAll(async () => {
  hls = await prepareHlsFixtures();
}, 120_000);

async function download(url: string, timeoutMs = 60_000): Promise<Download> {
  const created = await app.http.createDownload({ url });
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed', 'failed', 'cancelled'], timeoutMs);
}

/** The yt-dlp processes of this machine whose command line names `text`. */
async function ytdlpProcessesWith(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const state = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // A zombie has run its course; only a live process is one left behind.
    if (cmdline.includes('yt-dlp') && cmdline.includes(text) && !/\) Z /.test(state)) found.push(Number(entry));
  }
  return found;
}

test('when a page only yt-dlp reads names an MP4, then it downloads byte for byte, named by the title yt-dlp reports, with its source', async () => {
  const media = source.file('/jw/media/clip.mp4', mediaPath('clip.mp4'));
  const url = source.content('/jw/watch.html', jwPlayer('Player page', media));
  const done = await download(url);
  expect(done).toMatchObject({ status: 'completed', error: null, source: { kind: 'site', extractor: 'Generic' } });
  expect(done.source!.title).toBeTruthy();
  expect(done.file!.filename).toBe(`${done.source!.title}.mp4`);
  const file = await app.http.getFile(done.download_url!);
  expect(createHash('sha256').update(file.body).digest('hex')).toBe(await sha256File(mediaPath('clip.mp4')));
  // yt-dlp only extracted: the file's bytes were asked for by the service, once.
  expect(source.requestsFor('/jw/media/clip.mp4').filter((request) => request.method === 'GET')).toHaveLength(1);
});

test('when a clip is asked of a page that names an MP4, then only the ranges the clip needs are fetched from it', async () => {
  const media = source.file('/jw-clip/media/keyframes.mp4', mediaPath('keyframes.mp4'));
  const url = source.content('/jw-clip/watch.html', jwPlayer('Clip page', media));
  const created = await app.http.createDownload({ url, clip: { start_seconds: 6, end_seconds: 7 } });
  expect(created.status).toBe(202);
  const done = await app.waitForStatus((created.body as Download).id, ['completed', 'failed', 'cancelled'], 60_000);
  expect(done).toMatchObject({ status: 'completed', error: null, source: { kind: 'site' }, clip: { start_seconds: 6, end_seconds: 7 } });
  expect(done.file!.duration_seconds).toBeGreaterThan(0.9);
  expect(done.file!.duration_seconds).toBeLessThan(1.5);
  const [first, ...ranged] = source.requestsFor('/jw-clip/media/keyframes.mp4').filter((request) => request.method === 'GET');
  // The first answer only says what the file is (what a socket's buffers took of it is counted);
  // then the index and the clip's samples, by ranges, well under the whole file.
  expect(first!.headers.range).toBeUndefined();
  expect(ranged.length).toBeGreaterThan(0);
  for (const request of ranged) expect(request.headers.range).toMatch(/^bytes=\d+-\d+$/);
  const sent = ranged.reduce((sum, request) => sum + request.bytesSent, 0);
  expect(sent).toBeLessThan((await stat(mediaPath('keyframes.mp4'))).size / 2);
});

test("when such a page leads to an HLS playlist, then the service's own HLS reader fetches every segment of it", async () => {
  serveHlsFixture(source, hls.ts, '/jw-hls');
  // The playlist under a name without .m3u8, which JW Player is told is HLS: yt-dlp reads that, the
  // built-in page reader (which looks for playlist URLs by their names) does not.
  const playlist = source.content('/jw-hls/stream', await readFile(`${hls.ts.dir}/${hls.ts.playlist}`), { contentType: 'application/vnd.apple.mpegurl' });
  const setup = `jwplayer("player").setup({file: "${playlist}", type: "hls"});`;
  const url = source.content('/jw-hls/watch.html', page('<title>Stream page</title>', `<div id="player"></div><script>${setup}</script>`));
  const done = await download(url);
  expect(done).toMatchObject({ status: 'completed', error: null, source: { kind: 'site', extractor: 'Generic' }, file: { content_type: 'video/mp4' } });
  const text = await readFile(`${hls.ts.dir}/${hls.ts.playlist}`, 'utf8');
  const segments = text.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
  expect(segments.length).toBeGreaterThan(1);
  // yt-dlp was told not to download: every segment request came from the service's reader.
  for (const segment of segments) {
    const asked = source.requestsFor(`/jw-hls/${segment}`);
    expect(asked.length).toBeGreaterThanOrEqual(1);
    // Asked for as the service asks for media (uncompressed; yt-dlp would ask for gzip): the service's reader asked.
    expect(asked.every((request) => request.headers['accept-encoding'] === 'identity')).toBe(true);
  }
});

describe('with private addresses allowed only for the page server', () => {
  let hidden: http.Server;
  let connections = 0;
  let guarded: TestService;

  beforeAll(async () => {
    hidden = http.createServer((_req, res) => res.end('secret'));
    hidden.on('connection', () => connections++);
    await new Promise<void>((resolve) => hidden.listen(0, '127.0.0.2', resolve));
    guarded = await startTestService({ ytdlp: 'on', allowPrivateAddresses: ['127.0.0.1'], maxAttempts: 1 });
  });

  afterAll(async () => {
    await guarded?.stop();
    await new Promise<void>((resolve) => hidden?.close(() => resolve()));
  });

  test('when an extraction is led to an ftp:// URL on a refused address, then it goes through the proxy too, and reaches nothing', async () => {
    const ftp = net.createServer((socket) => socket.end('220 hello\r\n'));
    let ftpConnections = 0;
    ftp.on('connection', () => ftpConnections++);
    await new Promise<void>((resolve) => ftp.listen(0, '127.0.0.2', resolve));
    try {
      const target = `ftp://127.0.0.2:${(ftp.address() as AddressInfo).port}/secret.mp4`;
      const url = source.content('/ftp/watch.html', page(`<meta http-equiv="refresh" content="0; url=${target}">`));
      const created = await guarded.http.createDownload({ url });
      const done = await guarded.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
      expect(done.status).toBe('failed');
      expect(ftpConnections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => ftp.close(() => resolve()));
    }
  });

  test('when an extraction is led to a loopback address the policy refuses, then it reaches nothing and the download fails blocked_address', async () => {
    const target = `http://127.0.0.2:${(hidden.address() as AddressInfo).port}/internal.mp4`;
    const url = source.content('/refresh/watch.html', page(`<meta http-equiv="refresh" content="0; url=${target}">`));
    const created = await guarded.http.createDownload({ url });
    expect(created.status).toBe(202);
    const done = await guarded.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
    // The page itself was read (by the service, then by yt-dlp through the proxy); the hidden server saw nothing.
    expect(source.requestsFor('/refresh/watch.html').length).toBeGreaterThanOrEqual(2);
    expect(connections).toBe(0);
  });
});

describe('an extraction that never ends', () => {
  /** The service's own GET gets the page; yt-dlp's (another User-Agent) is held open, never answered. */
  function hangingForYtDlp(route: string): string {
    return source.route(route, (req, res) => {
      if (req.headers['user-agent'] === 'video-download-service') {
        res.setHeader('Content-Type', 'text/html');
        res.end(page('<title>Held</title>', '<p>Nothing the service reads.</p>'));
      }
    });
  }

  test('when yt-dlp takes longer than YTDLP_TIMEOUT_SECONDS, then the download fails source_timeout and no yt-dlp is left running', async () => {
    const quick = await startTestService({ ytdlp: 'on', ytdlpTimeoutSeconds: 2, maxAttempts: 1 });
    try {
      const url = hangingForYtDlp('/hung/watch.html');
      const created = await quick.http.createDownload({ url });
      const done = await quick.waitForStatus((created.body as Download).id, ['completed', 'failed'], 30_000);
      expect(done).toMatchObject({ status: 'failed', error: { code: 'source_timeout' } });
      expect(await ytdlpProcessesWith('/hung/watch.html')).toEqual([]);
    } finally {
      await quick.stop();
    }
  });

  test('when the download is cancelled during the extraction, then it ends cancelled and no yt-dlp is left running', async () => {
    const url = hangingForYtDlp('/cancelled/watch.html');
    const created = await app.http.createDownload({ url });
    const { id } = created.body as Download;
    await waitFor('yt-dlp to run', async () => (await ytdlpProcessesWith('/cancelled/watch.html')).length > 0, 20_000);
    const cancelled = await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
    expect((cancelled.body as Download).status).toBe('cancelled');
    await waitFor('yt-dlp to be gone', async () => (await ytdlpProcessesWith('/cancelled/watch.html')).length === 0, 10_000);
    await sleep(200);
    expect(await ytdlpProcessesWith('/cancelled/watch.html')).toEqual([]);
  });
});

test('when /readyz is asked, then it names the version of yt-dlp the service extracts with', async () => {
  const res = await app.http.request('GET', '/readyz', '/readyz');
  // The yt-dlp on PATH, as a person would run it.
  const { stdout } = await promisify(execFile)('yt-dlp', ['--version']);
  expect(res.body).toEqual({ status: 'ready', yt_dlp: stdout.trim() });
});

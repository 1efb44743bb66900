import { mkdtempSync } from 'node:fs';
import { chmod, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../../src/core/errors.ts';
import { findYtDlp, type ExtractOptions, type YtDlp } from '../../src/sources/site/ytdlp.ts';
import { startedLater } from './harness.ts';

// yt-dlp run for real (Debian's 2023.03.04) against pages served on loopback, through a small
// forwarding proxy written here (the service's own proxy has tests of its own), and a stand-in
// program where what is checked is what the service does with yt-dlp's output or exit.

export type Origin = { url: string; hung: http.ServerResponse[]; requests: string[] };
export type Proxy = { url: string; targets: string[] };

const CLIP = randomBytes(4096);
const MASTER = [
  '#EXTM3U',
  '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,URI="audio.m3u8"',
  '#EXT-X-STREAM-INF:BANDWIDTH=400400,RESOLUTION=320x240,CODECS="avc1.4d400d,mp4a.40.2",AUDIO="aud"',
  'v240.m3u8',
  '#EXT-X-STREAM-INF:BANDWIDTH=180400,RESOLUTION=160x120,CODECS="avc1.4d400b,mp4a.40.2",AUDIO="aud"',
  'v120.m3u8',
  '',
].join('\n');

const page = (title: string, body: string) => `<!DOCTYPE html><html><head><title>${title}</title></head><body>${body}</body></html>`;
const PAGES: Record<string, string> = {
  '/jw.html': page('A JW Player page', '<div id="player"></div><script>jwplayer("player").setup({file: "clip.mp4"});</script>'),
  '/jw-hls.html': page('An HLS page', '<div id="player"></div><script>jwplayer("player").setup({file: "/master.m3u8"});</script>'),
  '/refresh.html': '<html><head><meta http-equiv="refresh" content="0; url=clip.mp4"></head><body></body></html>',
  '/nothing.html': page('Nothing here', '<p>No video on this page.</p>'),
};

export type YtDlpSite = {
  /** The yt-dlp found on PATH. */
  ytdlp: YtDlp;
  /** The site: the pages above, a clip, an HLS master, any status at /status/N, and /hang, which never answers. */
  origin: Origin;
  /** A forwarding proxy with a credential in its URL, which every extraction goes through unless told otherwise. */
  proxy: Proxy;
  /** A scratch directory of this file, removed after its tests. */
  dir: string;
  /** Extraction options for `url` through `proxy`, generic extractor only, a minute at most. */
  options: (url: string, more?: Partial<ExtractOptions>) => ExtractOptions;
  /** Listens on a free port of 127.0.0.1, closed after the file's tests; returns its URL. */
  listen: (server: http.Server) => Promise<string>;
  /**
   * An HTTP proxy for absolute-form requests: `forward` sends each on to its target, `refuse` answers
   * 403 as a proxy applying an address policy would. Either answers 403 to every CONNECT.
   */
  startProxy: (mode: 'forward' | 'refuse') => Promise<Proxy>;
  /** A stand-in for yt-dlp: a shell script with `body`. */
  fakeYtDlp: (body: string) => Promise<YtDlp>;
  /** A stand-in that prints `stdout` and `stderr` (kept in files, not quoted into the script) and exits with `code`. */
  cannedYtDlp: (stdout: string, stderr: string, code: number) => Promise<YtDlp>;
};

/** Registers the hooks that find yt-dlp and start the origin and the proxy before the file's tests, and stop them after. */
export function useYtDlpSite(): YtDlpSite {
  const servers: net.Server[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vds-ytdlp-test-'));
  const ytdlp = startedLater<YtDlp>('yt-dlp');
  const origin = startedLater<Origin>('the origin');
  const proxy = startedLater<Proxy>('the proxy');
  const signal = new AbortController().signal;

  async function listen(server: http.Server): Promise<string> {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  }

  async function startOrigin(): Promise<Origin> {
    const seen: Omit<Origin, 'url'> = { hung: [], requests: [] };
    const server = http.createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://origin');
      seen.requests.push(url.pathname + url.search);
      const html = PAGES[url.pathname];
      if (html) return response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
      if (url.pathname === '/clip.mp4') return response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': CLIP.length }).end(CLIP);
      if (url.pathname === '/master.m3u8') return response.writeHead(200, { 'content-type': 'application/vnd.apple.mpegurl' }).end(MASTER);
      if (url.pathname === '/hang') return void seen.hung.push(response);
      const status = /^\/status\/(\d{3})$/.exec(url.pathname)?.[1];
      response.writeHead(status ? Number(status) : 404, { 'content-type': 'text/html' }).end(page('Error', '<p>error</p>'));
    });
    return { url: await listen(server), ...seen };
  }

  async function startProxy(mode: 'forward' | 'refuse'): Promise<Proxy> {
    const targets: string[] = [];
    const server = http.createServer((request, response) => {
      targets.push(request.url ?? '');
      if (mode === 'refuse') return response.writeHead(403).end();
      const outgoing = http.request(request.url ?? '', { method: request.method, headers: request.headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      outgoing.on('error', () => response.writeHead(502).end());
      request.pipe(outgoing);
    });
    server.on('connect', (request: http.IncomingMessage, socket: net.Socket) => {
      targets.push(`CONNECT ${request.url}`);
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
    });
    const url = await listen(server);
    return { url: url.replace('http://', 'http://run:s3cretPassw0rd@'), targets };
  }

  async function fakeYtDlp(body: string): Promise<YtDlp> {
    const file = path.join(dir, `fake-${randomBytes(4).toString('hex')}`);
    await writeFile(file, `#!/bin/sh\n${body}\n`);
    await chmod(file, 0o755);
    return { path: file, version: 'fake' };
  }

  async function cannedYtDlp(stdout: string, stderr: string, code: number): Promise<YtDlp> {
    const base = path.join(dir, `canned-${randomBytes(4).toString('hex')}`);
    await writeFile(`${base}.out`, stdout);
    await writeFile(`${base}.err`, stderr);
    return fakeYtDlp(`cat '${base}.out'; cat '${base}.err' >&2; exit ${code}`);
  }

  beforeAll(async () => {
    const found = await findYtDlp({ ytdlp: 'on', ytdlpPath: undefined });
    if (!found) throw new Error('These tests need yt-dlp on PATH.');
    ytdlp.set(found);
    origin.set(await startOrigin());
    proxy.set(await startProxy('forward'));
  });

  afterAll(async () => {
    for (const response of origin.get()?.hung ?? []) response.socket?.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await rm(dir, { recursive: true, force: true });
  });

  return {
    ytdlp: ytdlp.value,
    origin: origin.value,
    proxy: proxy.value,
    dir,
    options: (url, more = {}) => ({ url, proxyUrl: proxy.value.url, extractors: 'generic', timeoutMs: 60_000, signal, ...more }),
    listen,
    startProxy,
    fakeYtDlp,
    cannedYtDlp,
  };
}

/** The DownloadError `promise` rejects with; fails the test if it settles otherwise. */
export async function failure(promise: Promise<unknown>): Promise<DownloadError> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DownloadError);
  return error as DownloadError;
}

/** Pids of the processes whose command line holds `marker`. */
export async function processesWith(marker: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  const lines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  return pids.filter((_, index) => lines[index]!.includes(marker)).map(Number);
}

export async function untilRunning(marker: string): Promise<number[]> {
  for (let waited = 0; waited < 10_000; waited += 25) {
    const pids = await processesWith(marker);
    if (pids.length > 0) return pids;
    await sleep(25);
  }
  throw new Error(`no process with ${marker} appeared`);
}

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { DownloadError } from '../src/core/errors.ts';
import { chooseFormats, safeHeaders } from '../src/sources/site/formats.ts';
import { extract, findYtDlp, killAllExtractions, runningExtractions, siteInfoOf, type ExtractOptions, type YtDlp } from '../src/sources/site/ytdlp.ts';

// yt-dlp run for real (Debian's 2023.03.04) against pages served on loopback, through a small
// forwarding proxy written here (the service's own proxy has tests of its own), and a stand-in
// program where what is checked is what the service does with yt-dlp's output or exit.

type Origin = { url: string; hung: http.ServerResponse[]; requests: string[] };
type Proxy = { url: string; targets: string[] };

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

const servers: net.Server[] = [];
let dir: string;
let ytdlp: YtDlp;
let origin: Origin;
let proxy: Proxy;
const signal = new AbortController().signal;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'vds-ytdlp-test-'));
  const found = await findYtDlp({ ytdlp: 'on', ytdlpPath: undefined });
  if (!found) throw new Error('These tests need yt-dlp on PATH.');
  ytdlp = found;
  origin = await startOrigin();
  proxy = await startProxy('forward');
});

afterAll(async () => {
  for (const response of origin.hung) response.socket?.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(dir, { recursive: true, force: true });
});

async function listen(server: http.Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** The site: the pages above, a clip, an HLS master, any status at /status/N, and /hang, which never answers. */
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

/**
 * An HTTP proxy for absolute-form requests: `forward` sends each on to its target, `refuse` answers
 * 403 as a proxy applying an address policy would. Either answers 403 to every CONNECT.
 */
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

function options(url: string, more: Partial<ExtractOptions> = {}): ExtractOptions {
  return { url, proxyUrl: proxy.url, extractors: 'generic', timeoutMs: 60_000, signal, ...more };
}

async function failure(promise: Promise<unknown>): Promise<DownloadError> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DownloadError);
  return error as DownloadError;
}

/** Pids of the processes whose command line holds `marker`. */
async function processesWith(marker: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  const lines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  return pids.filter((_, index) => lines[index]!.includes(marker)).map(Number);
}

async function untilRunning(marker: string): Promise<number[]> {
  for (let waited = 0; waited < 10_000; waited += 25) {
    const pids = await processesWith(marker);
    if (pids.length > 0) return pids;
    await sleep(25);
  }
  throw new Error(`no process with ${marker} appeared`);
}

/** A stand-in for yt-dlp: a shell script with `body`. */
async function fakeYtDlp(body: string): Promise<YtDlp> {
  const file = path.join(dir, `fake-${randomBytes(4).toString('hex')}`);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return { path: file, version: 'fake' };
}

/** A stand-in that prints `stdout` and `stderr` (kept in files, not quoted into the script) and exits with `code`. */
async function cannedYtDlp(stdout: string, stderr: string, code: number): Promise<YtDlp> {
  const base = path.join(dir, `canned-${randomBytes(4).toString('hex')}`);
  await writeFile(`${base}.out`, stdout);
  await writeFile(`${base}.err`, stderr);
  return fakeYtDlp(`cat '${base}.out'; cat '${base}.err' >&2; exit ${code}`);
}

describe('finding yt-dlp', () => {
  test('when yt-dlp is on PATH, then it is found with the version it reports', async () => {
    const { stdout } = await promisify(execFile)('yt-dlp', ['--version']);
    expect(ytdlp.version).toBe(stdout.trim());
    expect(path.basename(ytdlp.path)).toBe('yt-dlp');
  });

  test('when YTDLP is off, then there is none', async () => {
    expect(await findYtDlp({ ytdlp: 'off', ytdlpPath: undefined })).toBeNull();
  });

  test('when YTDLP_PATH names no program, then there is none', async () => {
    expect(await findYtDlp({ ytdlp: 'on', ytdlpPath: path.join(dir, 'missing') })).toBeNull();
  });

  test('when YTDLP_PATH names a program, then that program is used, and its version read', async () => {
    const fake = await fakeYtDlp('echo 2099.12.31');
    expect(await findYtDlp({ ytdlp: 'on', ytdlpPath: fake.path })).toEqual({ path: fake.path, version: '2099.12.31' });
  });

  test('when the program does not answer --version sensibly, then there is none', async () => {
    const fake = await fakeYtDlp('echo "not a version at all"; exit 3');
    expect(await findYtDlp({ ytdlp: 'on', ytdlpPath: fake.path })).toBeNull();
  });
});

describe('extracting with yt-dlp', () => {
  test("when a page sets up JW Player with an mp4, then yt-dlp's generic extractor finds it, through the proxy", async () => {
    const info = await extract(ytdlp, options(`${origin.url}/jw.html`));
    expect(info).toMatchObject({ extractor_key: 'Generic', extractor: 'generic' });
    expect(info.formats).toEqual([expect.objectContaining({ url: `${origin.url}/clip.mp4`, protocol: 'http', ext: 'mp4' })]);
    expect(proxy.targets).toContain(`${origin.url}/jw.html`);
    expect(chooseFormats(info, 'best')).toMatchObject({ kind: 'direct', muxed: { url: `${origin.url}/clip.mp4` } });
  });

  test('when a page sets up JW Player with an HLS master, then its variants and audio come back, and the chooser merges them', async () => {
    const info = await extract(ytdlp, options(`${origin.url}/jw-hls.html`));
    const heights = (info.formats ?? []).map((format) => format.height ?? null).sort();
    expect(heights).toEqual([120, 240, null]);
    expect(chooseFormats(info, 'best')).toMatchObject({
      kind: 'hls',
      video: { url: `${origin.url}/v240.m3u8`, manifest_url: `${origin.url}/master.m3u8`, height: 240 },
      audio: { url: `${origin.url}/audio.m3u8` },
    });
    expect(chooseFormats(info, 200)).toMatchObject({ video: { url: `${origin.url}/v120.m3u8`, height: 120 } });
  });

  test('when a page redirects with a meta refresh to a file, then that file is found', async () => {
    const info = await extract(ytdlp, options(`${origin.url}/refresh.html`));
    expect(chooseFormats(info, 'best')).toMatchObject({ kind: 'direct', muxed: { url: `${origin.url}/clip.mp4` } });
  });

  test('when a page has no media, then the extraction fails unsupported_source', async () => {
    const error = await failure(extract(ytdlp, options(`${origin.url}/nothing.html`)));
    expect(error).toMatchObject({ code: 'unsupported_source', retryable: false });
    expect(error.message).toContain(`Unsupported URL: ${origin.url}/nothing.html`);
  });

  test('when only dedicated extractors may run, then a page only the generic one reads fails unsupported_source', async () => {
    const error = await failure(extract(ytdlp, options(`${origin.url}/jw.html`, { extractors: 'dedicated' })));
    expect(error).toMatchObject({ code: 'unsupported_source' });
    expect(error.message).toContain('No suitable extractor');
  });

  test('when the page answers 404, then source_http_error, not retried', async () => {
    const error = await failure(extract(ytdlp, options(`${origin.url}/status/404`)));
    expect(error).toMatchObject({ code: 'source_http_error', retryable: false });
    expect(error.message).toContain('HTTP Error 404: Not Found');
  });

  test('when the page answers 500, then source_http_error, retried', async () => {
    const error = await failure(extract(ytdlp, options(`${origin.url}/status/500`)));
    expect(error).toMatchObject({ code: 'source_http_error', retryable: true });
  });

  test('when the proxy is not there, then nothing is reached around it: source_unreachable', async () => {
    const closed = http.createServer();
    const url = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const before = origin.requests.length;
    const error = await failure(extract(ytdlp, options(`${origin.url}/jw.html`, { proxyUrl: url })));
    expect(error).toMatchObject({ code: 'source_unreachable', retryable: true });
    expect(origin.requests.length).toBe(before);
  });

  test('when the proxy refuses a CONNECT, then blocked_address, and the message holds nothing of the proxy', async () => {
    const error = await failure(extract(ytdlp, options(`https://127.0.0.1:1/page.html`)));
    expect(error).toMatchObject({ code: 'blocked_address', retryable: false });
    expect(proxy.targets).toContain('CONNECT 127.0.0.1:1');
    const port = new URL(proxy.url).port;
    for (const secret of ['s3cretPassw0rd', 'run:', `:${port}`]) expect(error.message).not.toContain(secret);
  });

  test('when the proxy refused a plain request, then blocked_address where the proxy says so, and an HTTP error where it does not', async () => {
    const refusing = await startProxy('refuse');
    const refused = await failure(extract(ytdlp, options(`${origin.url}/jw.html`, { proxyUrl: refusing.url, refusedHosts: () => ['127.0.0.1'] })));
    expect(refused).toMatchObject({ code: 'blocked_address' });
    expect(refused.message).toContain('127.0.0.1');
    const unsaid = await failure(extract(ytdlp, options(`${origin.url}/jw.html`, { proxyUrl: refusing.url, refusedHosts: () => [] })));
    expect(unsaid).toMatchObject({ code: 'source_http_error' });
  });

  test('when the site never answers, then source_timeout at the time limit, and no yt-dlp is left', async () => {
    const marker = `/hang?timeout=${randomBytes(6).toString('hex')}`;
    const started = Date.now();
    const extraction = failure(extract(ytdlp, options(`${origin.url}${marker}`, { timeoutMs: 2000 })));
    expect((await untilRunning(marker)).length).toBeGreaterThan(0);
    expect(await extraction).toMatchObject({ code: 'source_timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await processesWith(marker)).toEqual([]);
    expect(runningExtractions()).toBe(0);
  });

  test('when the download is cancelled, then the extraction rejects with the reason, and no yt-dlp is left', async () => {
    const marker = `/hang?abort=${randomBytes(6).toString('hex')}`;
    const controller = new AbortController();
    const extraction = extract(ytdlp, options(`${origin.url}${marker}`, { signal: controller.signal }));
    await untilRunning(marker);
    const reason = new Error('cancelled by its owner');
    controller.abort(reason);
    await expect(extraction).rejects.toBe(reason);
    expect(await processesWith(marker)).toEqual([]);
  });

  test('when the signal is aborted already, then yt-dlp is not started', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    const before = origin.requests.length;
    await expect(extract(ytdlp, options(`${origin.url}/jw.html`, { signal: controller.signal }))).rejects.toThrow('too late');
    expect(origin.requests.length).toBe(before);
  });

  test('when the service shuts down, then every yt-dlp still running is killed, and their extractions may be retried', async () => {
    const markers = [1, 2].map((n) => `/hang?shutdown=${n}-${randomBytes(6).toString('hex')}`);
    const extractions = markers.map((marker) => failure(extract(ytdlp, options(`${origin.url}${marker}`))));
    for (const marker of markers) await untilRunning(marker);
    await killAllExtractions();
    for (const extraction of extractions) expect(await extraction).toMatchObject({ code: 'internal_error', retryable: true });
    for (const marker of markers) expect(await processesWith(marker)).toEqual([]);
  });

  test("when yt-dlp's output passes the bound, then source_too_large", async () => {
    const error = await failure(extract(ytdlp, options(`${origin.url}/jw.html`, { maxOutputBytes: 1000 })));
    expect(error).toMatchObject({ code: 'source_too_large', retryable: false });
  });

  test('when the URL is not http or https, then yt-dlp is not asked', async () => {
    const fake = await fakeYtDlp(`touch '${dir}/asked'; exit 1`);
    expect(await failure(extract(fake, options('ytsearch:cats')))).toMatchObject({ code: 'unsupported_source' });
    await expect(stat(path.join(dir, 'asked'))).rejects.toThrow('ENOENT');
  });
});

describe('how yt-dlp is run', () => {
  test('when yt-dlp runs, then it gets only PATH, HOME, LANG and the proxy for every scheme, a fresh HOME as its directory, removed afterwards, and the URL after --', async () => {
    const record = path.join(dir, 'run-record');
    const fake = await fakeYtDlp(
      [
        `tr '\\0' '\\n' < /proc/$$/environ | sort > '${record}.env'`,
        `pwd > '${record}.cwd'`,
        `grep 'Max address space' /proc/$$/limits > '${record}.limits'`,
        `for arg in "$@"; do echo "$arg"; done > '${record}.args'`,
        `printf '{"_type":"video","extractor_key":"Fake","title":"t","url":"http://127.0.0.1/c.mp4","protocol":"http"}'`,
      ].join('\n'),
    );
    process.env.VDS_LEAK_CHECK = 'must not reach yt-dlp';
    try {
      await extract(fake, options('http://127.0.0.1/page?a=1', { extractors: 'dedicated' }));
    } finally {
      delete process.env.VDS_LEAK_CHECK;
    }
    const env = (await readFile(`${record}.env`, 'utf8')).trim().split('\n');
    const home = (await readFile(`${record}.cwd`, 'utf8')).trim();
    const proxies = ['FTP_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'ftp_proxy', 'http_proxy', 'https_proxy'];
    expect(env.map((line) => line.split('=')[0])).toEqual([
      'FTP_PROXY',
      'HOME',
      'HTTPS_PROXY',
      'HTTP_PROXY',
      'LANG',
      'PATH',
      'ftp_proxy',
      'http_proxy',
      'https_proxy',
    ]);
    for (const name of proxies) expect(env).toContain(`${name}=${proxy.url}`);
    expect(env).toContain(`HOME=${home}`);
    expect(env).toContain('LANG=C.UTF-8');
    await expect(stat(home)).rejects.toThrow('ENOENT');
    // Held to 2 GiB of address space (util-linux's prlimit), so that a page cannot make it take the machine's memory.
    expect(await readFile(`${record}.limits`, 'utf8')).toMatch(/^Max address space\s+2147483648\s+2147483648\s+bytes/);
    const args = (await readFile(`${record}.args`, 'utf8')).trim().split('\n');
    expect(args).toEqual([
      '--dump-single-json',
      '--no-playlist',
      '--playlist-items',
      '1',
      '--ignore-config',
      '--no-cache-dir',
      '--no-download',
      '--ies',
      'default,-generic',
      '--',
      'http://127.0.0.1/page?a=1',
    ]);
  });

  test('when yt-dlp runs with every extractor, then no --ies is given', async () => {
    const record = path.join(dir, 'all-args');
    const fake = await fakeYtDlp(`echo "$@" > '${record}'; printf '{"url":"http://127.0.0.1/c.mp4","protocol":"http"}'`);
    await extract(fake, options('http://127.0.0.1/page', { extractors: 'all' }));
    expect(await readFile(record, 'utf8')).not.toContain('--ies');
  });

  test('when yt-dlp leaves a process of its own behind, then a kill takes that one too', async () => {
    const marker = `grandchild-${randomBytes(6).toString('hex')}`;
    // Its output elsewhere, so that nothing but the kill of the group ends it before the run is over.
    const fake = await fakeYtDlp(`sh -c 'sleep 60; echo ${marker}' >/dev/null 2>&1 </dev/null &\nexec sleep 30`);
    const extraction = failure(extract(fake, options('http://127.0.0.1/page', { timeoutMs: 1000 })));
    await untilRunning(marker);
    expect(await extraction).toMatchObject({ code: 'source_timeout' });
    expect(await processesWith(marker)).toEqual([]);
  });
});

// The ERROR lines yt-dlp 2023.03.04 printed in these cases (the research runs behind this file).
const ERROR_LINES: [string, string, { code: string; retryable: boolean }][] = [
  ['a page with no media', 'ERROR: Unsupported URL: http://127.0.0.1:18731/nomedia.html', { code: 'unsupported_source', retryable: false }],
  ['no dedicated extractor', 'ERROR: No suitable extractor found for URL http://127.0.0.1:18731/jw.html', { code: 'unsupported_source', retryable: false }],
  [
    'a 404',
    "ERROR: [generic] None: Unable to download webpage: HTTP Error 404: Not Found (caused by <HTTPError 404: 'Not Found'>); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_http_error', retryable: false },
  ],
  [
    'a 503',
    "ERROR: [generic] None: Unable to download webpage: HTTP Error 503: Service Unavailable (caused by <HTTPError 503: 'Service Unavailable'>); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_http_error', retryable: true },
  ],
  [
    'a refused connection',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error [Errno 111] Connection refused> (caused by URLError(ConnectionRefusedError(111, 'Connection refused')))",
    { code: 'source_unreachable', retryable: true },
  ],
  [
    'a CONNECT the proxy refused',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 403 Forbidden> (caused by URLError(OSError('Tunnel connection failed: 403 Forbidden')))",
    { code: 'blocked_address', retryable: false },
  ],
  [
    'a CONNECT the proxy could not dial',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 502 Bad Gateway> (caused by URLError(OSError('Tunnel connection failed: 502 Bad Gateway')))",
    { code: 'source_unreachable', retryable: true },
  ],
  [
    'a CONNECT without the credential',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 407 Proxy Authentication Required> (caused by URLError(OSError('Tunnel connection failed: 407 Proxy Authentication Required')))",
    { code: 'internal_error', retryable: true },
  ],
  ['a DRM-protected stream', 'ERROR: [generic] media: This video is DRM protected', { code: 'drm_protected', retryable: false }],
  [
    "yt-dlp's own socket timeout",
    "ERROR: [generic] None: Unable to download webpage: timed out (caused by TimeoutError('timed out')); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_timeout', retryable: true },
  ],
  [
    'a TLS failure',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)> (caused by URLError(SSLError(1, '[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)')))",
    { code: 'source_unreachable', retryable: false },
  ],
  [
    'an unsupported URL whose path says DRM',
    'ERROR: Unsupported URL: http://127.0.0.1/DRM-protected/HTTP%20Error%20500',
    { code: 'unsupported_source', retryable: false },
  ],
  ['anything else', 'ERROR: [youtube] abc: Video unavailable', { code: 'unsupported_source', retryable: false }],
];

describe("reading yt-dlp's failures", () => {
  test.each(ERROR_LINES)('when yt-dlp reports %s, then the right code', async (_case, line, expected) => {
    const fake = await cannedYtDlp('', `WARNING: [generic] Falling back on generic information extractor\n${line}\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error).toMatchObject(expected);
    expect(error.message).not.toContain('please report');
    expect(error.message).not.toContain('ERROR:');
  });

  test('when the ERROR line carries escapes, controls, the proxy credential and a lot of text, then the reason is short and clean', async () => {
    const { username, password } = new URL(proxy.url);
    const line = `\x1b[0;31mERROR:\x1b[0m [generic] x: \u202eUnable\x07 to open ${proxy.url} as ${username}:${password} (${Buffer.from(`${username}:${password}`).toString('base64')}) ${'very long '.repeat(100)}`;
    const fake = await cannedYtDlp('', `${line}\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(error.message).not.toContain(password);
    expect(error.message).not.toContain(new URL(proxy.url).host);
    expect(error.message).toContain('Unable to open');
    expect(error.message.length).toBeLessThan(300);
  });

  test("when the ERROR line names another port that starts with the proxy's, then that one stays", async () => {
    const { host } = new URL(proxy.url);
    const fake = await cannedYtDlp('', `ERROR: Unsupported URL: http://${host}7/page and http://${host}/\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error.message).toContain(`http://${host}7/page and [proxy]/`);
  });

  test('when yt-dlp says the page is a live stream, then unsupported_source', async () => {
    const fake = await cannedYtDlp(JSON.stringify({ _type: 'video', is_live: true, url: 'http://127.0.0.1/live.m3u8', protocol: 'm3u8_native' }), '', 0);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error).toMatchObject({ code: 'unsupported_source' });
    expect(error.message).toContain('live streams are not downloaded');
  });

  test('when yt-dlp answers something other than JSON, then unsupported_source', async () => {
    const fake = await cannedYtDlp('<html>not json', '', 0);
    expect(await failure(extract(fake, options('http://127.0.0.1/page')))).toMatchObject({ code: 'unsupported_source' });
  });
});

// Trimmed from what yt-dlp 2023.03.04 printed for the pages of the research runs; `youtubeLike` is
// shaped as a dedicated extractor's answer (separate https video and audio, a storyboard, one muxed).
const headers = {
  'User-Agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/95.0.4638.17 Safari/537.36',
  Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'Accept-Language': 'en-us,en;q=0.5',
  'Sec-Fetch-Mode': 'navigate',
};
const gv = (itag: string) => `https://rr1---sn-example.googlevideo.com/videoplayback?itag=${itag}&expire=1795652282`;
const youtubeLike = {
  id: 'BaW_jenozKc',
  title: 'A talk',
  formats: [
    {
      format_id: 'sb0',
      format_note: 'storyboard',
      ext: 'mhtml',
      protocol: 'mhtml',
      acodec: 'none',
      vcodec: 'none',
      url: 'https://i.ytimg.com/sb/x/M$M.jpg',
      width: 160,
      height: 90,
      fps: 0.5,
      rows: 5,
      columns: 5,
      fragments: [{ url: 'https://i.ytimg.com/sb/x/M0.jpg', duration: 10 }],
    },
    {
      format_id: '139',
      format_note: 'low',
      acodec: 'mp4a.40.5',
      vcodec: 'none',
      url: gv('139'),
      ext: 'm4a',
      protocol: 'https',
      tbr: 48.6,
      filesize: 61_000,
      asr: 22050,
      audio_channels: 2,
      http_headers: headers,
    },
    {
      format_id: '140',
      format_note: 'medium',
      acodec: 'mp4a.40.2',
      vcodec: 'none',
      url: gv('140'),
      ext: 'm4a',
      protocol: 'https',
      tbr: 129.5,
      filesize: 162_000,
      asr: 44100,
      audio_channels: 2,
      http_headers: headers,
    },
    {
      format_id: '134',
      format_note: '360p',
      acodec: 'none',
      vcodec: 'avc1.4d401e',
      url: gv('134'),
      ext: 'mp4',
      protocol: 'https',
      width: 640,
      height: 360,
      tbr: 310.2,
      http_headers: headers,
    },
    {
      format_id: '18',
      format_note: '360p',
      acodec: 'mp4a.40.2',
      vcodec: 'avc1.42001E',
      url: gv('18'),
      ext: 'mp4',
      protocol: 'https',
      width: 640,
      height: 360,
      tbr: 505.1,
      http_headers: headers,
    },
    {
      format_id: '136',
      format_note: '720p',
      acodec: 'none',
      vcodec: 'avc1.4d401f',
      url: gv('136'),
      ext: 'mp4',
      protocol: 'https',
      width: 1280,
      height: 720,
      tbr: 1212.4,
      http_headers: headers,
    },
    {
      format_id: '247',
      format_note: '720p',
      acodec: 'none',
      vcodec: 'vp9',
      url: gv('247'),
      ext: 'webm',
      protocol: 'https',
      width: 1280,
      height: 720,
      tbr: 1509.9,
      http_headers: headers,
    },
    {
      format_id: '137',
      format_note: '1080p',
      acodec: 'none',
      vcodec: 'avc1.640028',
      url: gv('137'),
      ext: 'mp4',
      protocol: 'https',
      width: 1920,
      height: 1080,
      tbr: 4022.0,
      http_headers: headers,
    },
  ],
  extractor: 'youtube',
  extractor_key: 'Youtube',
  _type: 'video',
};

const base = 'http://127.0.0.1:18731/master';
const hlsWithAudio = {
  id: 'master',
  title: 'master',
  formats: [
    {
      format_id: 'group_aud-audio_2',
      format_note: 'audio_2',
      format_index: null,
      url: `${base}/vaudio.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      language: null,
      ext: 'mp4',
      protocol: 'm3u8_native',
      preference: null,
      quality: null,
      has_drm: null,
      vcodec: 'none',
      resolution: 'audio only',
      http_headers: headers,
    },
    {
      format_id: '180',
      format_index: null,
      url: `${base}/v1.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      tbr: 180.4,
      ext: 'mp4',
      fps: null,
      protocol: 'm3u8_native',
      has_drm: null,
      width: 160,
      height: 120,
      vcodec: 'avc1.f4000b',
      acodec: 'none',
      http_headers: headers,
    },
    {
      format_id: '400',
      format_index: null,
      url: `${base}/v0.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      tbr: 400.4,
      ext: 'mp4',
      fps: null,
      protocol: 'm3u8_native',
      has_drm: null,
      width: 320,
      height: 240,
      vcodec: 'avc1.f4000d',
      acodec: 'none',
      http_headers: headers,
    },
  ],
  extractor: 'generic',
  extractor_key: 'Generic',
  _type: 'video',
};

const hlsMuxed = {
  title: 'muxed',
  formats: [
    {
      format_id: '640',
      url: `${base}/v1.m3u8`,
      manifest_url: `${base}/muxed.m3u8`,
      tbr: 640.0,
      ext: 'mp4',
      protocol: 'm3u8_native',
      has_drm: null,
      width: 640,
      height: 360,
      vcodec: 'avc1.4d401e',
      acodec: 'mp4a.40.2',
      abr: 0.0,
    },
    {
      format_id: '1280',
      url: `${base}/v0.m3u8`,
      manifest_url: `${base}/muxed.m3u8`,
      tbr: 1280.0,
      ext: 'mp4',
      protocol: 'm3u8_native',
      has_drm: null,
      width: 1280,
      height: 720,
      vcodec: 'avc1.64001f',
      acodec: 'mp4a.40.2',
      abr: 0.0,
    },
  ],
  extractor_key: 'Generic',
  _type: 'video',
};

const mpd = 'http://127.0.0.1:18731/dash/manifest.mpd';
const dash = {
  title: 'manifest',
  formats: [
    {
      format_id: '2',
      manifest_url: mpd,
      ext: 'm4a',
      width: null,
      height: null,
      tbr: 69.0,
      asr: 44100,
      format_note: 'DASH audio',
      container: 'm4a_dash',
      vcodec: 'none',
      acodec: 'mp4a.40.2',
      url: mpd,
      fragment_base_url: 'http://127.0.0.1:18731/dash/',
      fragments: [{ path: 'init-stream2.m4s' }],
      protocol: 'http_dash_segments',
      manifest_stream_number: 2,
    },
    {
      format_id: '1',
      manifest_url: mpd,
      ext: 'mp4',
      width: 160,
      height: 120,
      tbr: 100.0,
      format_note: 'DASH video',
      container: 'mp4_dash',
      vcodec: 'avc1.f4000b',
      acodec: 'none',
      url: mpd,
      fragments: [{ path: 'init-stream1.m4s' }],
      protocol: 'http_dash_segments',
    },
    {
      format_id: '0',
      manifest_url: mpd,
      ext: 'mp4',
      width: 320,
      height: 240,
      tbr: 300.0,
      format_note: 'DASH video',
      container: 'mp4_dash',
      vcodec: 'avc1.f4000d',
      acodec: 'none',
      url: mpd,
      fragments: [{ path: 'init-stream0.m4s' }],
      protocol: 'http_dash_segments',
    },
  ],
  extractor_key: 'Generic',
  _type: 'video',
};

/** A `twitter:player:stream` page: one file, no `formats` list. */
const single = {
  id: 'clip',
  title: 'TW',
  http_headers: { ...headers, Referer: 'http://127.0.0.1:18731/twstream.html' },
  url: 'http://127.0.0.1:18731/clip.mp4',
  extractor: 'generic',
  extractor_key: 'Generic',
  ext: 'mp4',
  protocol: 'http',
  resolution: null,
  format_id: '0',
  _type: 'video',
};

const withFormats = (info: { formats: object[] }, formats: object[]) => siteInfoOf({ ...info, formats });

describe('choosing among the formats', () => {
  test('when the site has separate video and audio, then best is the tallest picture with the best audio', () => {
    const choice = chooseFormats(siteInfoOf(youtubeLike), 'best');
    expect(choice).toMatchObject({
      kind: 'direct',
      video: { format_id: '137', height: 1080, url: gv('137'), ext: 'mp4' },
      audio: { format_id: '140', ext: 'm4a' },
    });
    expect(choice.muxed).toBeUndefined();
    expect(choice.video!.headers).toEqual({ 'User-Agent': headers['User-Agent'], Accept: headers.Accept, 'Accept-Language': headers['Accept-Language'] });
  });

  test('when a height is asked, then the best picture no taller, the higher bitrate among equals', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 720)).toMatchObject({ video: { format_id: '247' }, audio: { format_id: '140' } });
    expect(chooseFormats(siteInfoOf(youtubeLike), 480)).toMatchObject({ muxed: { format_id: '18' } });
  });

  test('when no picture is as small as asked, then the smallest there is, never a storyboard', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 100)).toMatchObject({ video: { format_id: '134', height: 360 } });
  });

  test('when worst is asked, then the smallest picture and the smallest audio', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 'worst')).toMatchObject({ video: { format_id: '134' }, audio: { format_id: '139' } });
  });

  test('when HLS variants have a separate audio rendition, then a variant playlist and the audio one, with their master', () => {
    expect(chooseFormats(siteInfoOf(hlsWithAudio), 'best')).toMatchObject({
      kind: 'hls',
      video: { kind: 'hls', url: `${base}/v0.m3u8`, manifest_url: `${base}/master.m3u8`, height: 240, format_id: '400' },
      audio: { kind: 'hls', url: `${base}/vaudio.m3u8`, manifest_url: `${base}/master.m3u8` },
    });
    expect(chooseFormats(siteInfoOf(hlsWithAudio), 120)).toMatchObject({ video: { format_id: '180' } });
  });

  test('when HLS variants carry their own sound, then one muxed variant', () => {
    expect(chooseFormats(siteInfoOf(hlsMuxed), 'best')).toEqual({
      kind: 'hls',
      muxed: { kind: 'hls', url: `${base}/v0.m3u8`, manifest_url: `${base}/muxed.m3u8`, headers: {}, ext: 'mp4', height: 720, format_id: '1280' },
    });
    expect(chooseFormats(siteInfoOf(hlsMuxed), 'worst')).toMatchObject({ muxed: { format_id: '640' } });
  });

  test('when the site gives a DASH manifest, then its representations by id, with the manifest', () => {
    expect(chooseFormats(siteInfoOf(dash), 'best')).toMatchObject({
      kind: 'dash',
      video: { format_id: '0', url: mpd, manifest_url: mpd, height: 240 },
      audio: { format_id: '2', url: mpd, ext: 'm4a' },
    });
  });

  test('when yt-dlp gives one file and no formats list, then that file, with the Referer it asks for', () => {
    const choice = chooseFormats(siteInfoOf(single), 'best');
    expect(choice).toMatchObject({ kind: 'direct', muxed: { url: single.url, ext: 'mp4', format_id: '0' } });
    expect(choice.muxed!.headers).toMatchObject({ Referer: 'http://127.0.0.1:18731/twstream.html' });
    expect(choice.muxed!.headers).not.toHaveProperty('Sec-Fetch-Mode');
  });

  test('when every format has DRM, then drm_protected', () => {
    const info = withFormats(
      hlsWithAudio,
      hlsWithAudio.formats.map((format) => ({ ...format, has_drm: true })),
    );
    expect(() => chooseFormats(info, 'best')).toThrow(expect.objectContaining({ code: 'drm_protected' }));
  });

  test('when only the taller formats have DRM, then the others are chosen', () => {
    const info = withFormats(
      youtubeLike,
      youtubeLike.formats.map((format) => ({ ...format, has_drm: (format.height ?? 0) >= 720 })),
    );
    expect(chooseFormats(info, 'best')).toMatchObject({ muxed: { format_id: '18' } });
  });

  test('when only protocols the service cannot fetch are offered, then unsupported_source; when one it can is among them, that one', () => {
    const others = [
      { format_id: 'rtmp', url: 'rtmp://media.example/app/clip', protocol: 'rtmp', ext: 'flv', height: 1080 },
      { format_id: 'hds', url: 'https://media.example/clip.f4m', protocol: 'f4m', ext: 'flv', height: 1080 },
      { format_id: 'mss', url: 'https://media.example/clip.ism/Manifest', protocol: 'ism', ext: 'ismv', height: 1080 },
      { format_id: 'ws', url: 'wss://media.example/live', protocol: 'websocket_frag', ext: 'mp4', height: 1080 },
      { format_id: 'odd', url: 'https://media.example/a.mp4', protocol: 'constructor', ext: 'mp4', height: 1080 },
    ];
    expect(() => chooseFormats(withFormats(youtubeLike, others), 'best')).toThrow(expect.objectContaining({ code: 'unsupported_source' }));
    const https = { format_id: 'plain', url: 'https://media.example/clip.mp4', protocol: 'https', ext: 'mp4', height: 240 };
    expect(chooseFormats(withFormats(youtubeLike, [...others, https]), 'best')).toMatchObject({ muxed: { format_id: 'plain' } });
  });

  test('when a site offers only audio, then the best audio', () => {
    const info = withFormats(
      youtubeLike,
      youtubeLike.formats.filter((format) => format.vcodec === 'none'),
    );
    expect(chooseFormats(info, 720)).toEqual({ kind: 'direct', audio: expect.objectContaining({ format_id: '140' }) });
  });

  test('when a format has fields of the wrong type, then it is left out and the others are kept', () => {
    const info = withFormats(hlsMuxed, [
      ...hlsMuxed.formats,
      { format_id: 'bad', url: `${base}/big.m3u8`, protocol: 'm3u8_native', height: '4320' },
      { format_id: 'no-url' },
    ]);
    expect(info.formats!.map((format) => format.format_id)).toEqual(['640', '1280']);
  });

  test('when yt-dlp answers a playlist, then its first video, under the playlist extractor', () => {
    const info = siteInfoOf({
      _type: 'playlist',
      extractor_key: 'Generic',
      extractor: 'generic',
      title: 'Feed',
      entries: [null, { _type: 'video', title: 'One', url: single.url, protocol: 'http' }],
    });
    expect(info).toMatchObject({ extractor_key: 'Generic', title: 'One', url: single.url });
  });
});

describe('the headers sent with a format', () => {
  test('when a site asks for headers, then only harmless ones of bounded size are kept', () => {
    const kept = safeHeaders({
      'User-Agent': 'UA',
      referer: 'http://a.example/',
      Origin: 'http://a.example',
      Cookie: 'k=v',
      'X-Playback-Session-Id': 'abc',
      Host: 'internal.example',
      Authorization: 'Bearer stolen',
      'Proxy-Authorization': 'Basic x',
      'Sec-Fetch-Mode': 'navigate',
      'X-Split': 'a\r\nInjected: yes',
      'X-Nul': 'a\0b',
      'X-Big': 'x'.repeat(5000),
      'Bad Name': 'v',
    });
    expect(kept).toEqual({ 'User-Agent': 'UA', referer: 'http://a.example/', Origin: 'http://a.example', Cookie: 'k=v', 'X-Playback-Session-Id': 'abc' });
  });

  test('when a site asks for many headers, then at most 20, one per name', () => {
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, n) => [`X-H${n}`, String(n)]));
    expect(Object.keys(safeHeaders({ Referer: 'a', REFERER: 'b', ...many }))).toHaveLength(20);
    expect(safeHeaders({ Referer: 'a', REFERER: 'b' })).toEqual({ Referer: 'a' });
  });
});

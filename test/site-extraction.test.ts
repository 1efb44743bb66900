import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { chooseFormats } from '../src/sources/site/formats.ts';
import { extract, findYtDlp, killAllExtractions, runningExtractions } from '../src/sources/site/ytdlp.ts';
import { failure, processesWith, untilRunning, useYtDlpSite } from './support/ytdlp-site.ts';

// yt-dlp found and run for real against the pages of the origin, through the proxy: what it finds,
// how its failures, time limits and cancels end, and that no run outlives its extraction.

const { ytdlp, origin, proxy, dir, options, listen, startProxy, fakeYtDlp } = useYtDlpSite();

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

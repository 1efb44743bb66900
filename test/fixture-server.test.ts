import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath, sha256File } from './support/media.ts';

type Fetched = { status: number; headers: http.IncomingHttpHeaders; body: Buffer; error?: Error };

/**
 * A plain node:http GET that keeps what arrived even when the connection fails, so the tests can
 * count the bytes before a cut or a stall. `idleMs` gives up when nothing arrives for that long.
 */
function get(url: string, headers: Record<string, string> = {}, options: { method?: string; idleMs?: number } = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const done = (error?: Error) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), error });
      if (options.idleMs) res.setTimeout(options.idleMs, () => res.destroy(new Error('idle')));
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done());
      res.on('error', done);
      res.on('aborted', () => done(new Error('aborted')));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('fixture server', () => {
  let source: FixtureServer;
  let big: Buffer;

  beforeAll(async () => {
    source = await startFixtureServer();
    big = await readFile(mediaPath('big.mp4'));
  });

  afterAll(async () => {
    await source.close();
  });

  test('when the global setup ran, then both media files exist and big.mp4 is at least 2 MB', async () => {
    expect(big.length).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    expect(await sha256File(mediaPath('clip.mp4'))).toMatch(/^[0-9a-f]{64}$/);
    // Real MP4s: an ftyp box first (faststart puts moov right after it).
    expect(big.subarray(4, 8).toString('latin1')).toBe('ftyp');
  });

  test('when a whole file is requested, then it is sent with its type, length, validators and exact bytes', async () => {
    const url = source.file('/whole/clip.mp4', mediaPath('clip.mp4'));
    const res = await get(url);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers.etag).toMatch(/^".+"$/);
    expect(res.headers['last-modified']).toBeDefined();
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    expect(res.body.equals(await readFile(mediaPath('clip.mp4')))).toBe(true);
  });

  test('when single ranges are requested, then each is a 206 with its Content-Range and exactly those bytes', async () => {
    const url = source.file('/range/big.mp4', mediaPath('big.mp4'));
    const cases: Array<[string, number, number]> = [
      ['bytes=100-199', 100, 199],
      ['bytes=1000-', 1000, big.length - 1],
      ['bytes=-500', big.length - 500, big.length - 1],
      [`bytes=0-${big.length + 10}`, 0, big.length - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await get(url, { Range: range });
      expect(res.status).toBe(206);
      expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/${big.length}`);
      expect(res.body.equals(big.subarray(start, end + 1))).toBe(true);
    }
    expect(source.requestsFor('/range/big.mp4').map((request) => request.range)).toEqual(cases.map(([range]) => range));
  });

  test('when the range starts past the end, then the answer is 416 with the full size', async () => {
    const url = source.file('/past-end/big.mp4', mediaPath('big.mp4'));
    const res = await get(url, { Range: `bytes=${big.length}-` });
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe(`bytes */${big.length}`);
  });

  test('when If-Range names another version, then the whole file is sent; when If-None-Match matches, then 304', async () => {
    const url = source.file('/validators/clip.mp4', mediaPath('clip.mp4'));
    const first = await get(url);
    const etag = String(first.headers.etag);
    const stale = await get(url, { Range: 'bytes=0-9', 'If-Range': '"something-else"' });
    expect(stale.status).toBe(200);
    expect(stale.body.length).toBe(first.body.length);
    const fresh = await get(url, { Range: 'bytes=0-9', 'If-Range': etag });
    expect(fresh.status).toBe(206);
    const cached = await get(url, { 'If-None-Match': etag });
    expect(cached.status).toBe(304);
    expect(cached.body.length).toBe(0);
  });

  test('when ranges are turned off, then a Range header is ignored and no Accept-Ranges is sent', async () => {
    const url = source.file('/no-ranges/clip.mp4', mediaPath('clip.mp4'), { ranges: false });
    const res = await get(url, { Range: 'bytes=0-9' });
    expect(res.status).toBe(200);
    expect(res.headers['accept-ranges']).toBeUndefined();
    expect(res.body.length).toBeGreaterThan(10);
  });

  test('when statuses are scripted, then requests get them in order and then the file', async () => {
    const url = source.file('/flaky/clip.mp4', mediaPath('clip.mp4'), { statuses: [503, 503], headers: { 'X-Fixture': 'yes' } });
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++) statuses.push((await get(url)).status);
    expect(statuses).toEqual([503, 503, 200, 200]);
    expect(source.requestsFor('/flaky/clip.mp4').map((request) => request.status)).toEqual([503, 503, 200, 200]);
  });

  test('when resetAfterBytes is set, then the first GET is cut after that many bytes and a ranged retry gets the rest', async () => {
    const cut = 300_000;
    const url = source.file('/reset/big.mp4', mediaPath('big.mp4'), { resetAfterBytes: cut });
    // A HEAD first must not use up the cut meant for the body.
    expect((await get(url, {}, { method: 'HEAD' })).status).toBe(200);

    const first = await get(url);
    expect(first.status).toBe(200);
    expect(Number(first.headers['content-length'])).toBe(big.length);
    expect(first.error).toBeDefined();
    expect(first.body.length).toBe(cut);

    const rest = await get(url, { Range: `bytes=${cut}-` });
    expect(rest.status).toBe(206);
    expect(rest.error).toBeUndefined();
    expect(Buffer.concat([first.body, rest.body]).equals(big)).toBe(true);

    const seen = source.requestsFor('/reset/big.mp4');
    expect(seen.map((request) => [request.method, request.range, request.outcome])).toEqual([
      ['HEAD', undefined, 'complete'],
      ['GET', undefined, 'cut'],
      ['GET', `bytes=${cut}-`, 'complete'],
    ]);
    expect(seen[1]?.bytesSent).toBe(cut);
  });

  test('when stallAfterBytes is set, then that many bytes arrive and then nothing until the client gives up', async () => {
    const url = source.file('/stall/big.mp4', mediaPath('big.mp4'), { stallAfterBytes: 65_536 });
    const stalled = await get(url, {}, { idleMs: 400 });
    expect(stalled.status).toBe(200);
    expect(stalled.error?.message).toMatch(/idle|aborted/);
    expect(stalled.body.length).toBe(65_536);
    // Only the first request stalls.
    const next = await get(url);
    expect(next.body.length).toBe(big.length);
  });

  test('when a step repeats forever, then every request gets it', async () => {
    const url = source.file('/always-stall/clip.mp4', mediaPath('clip.mp4'), { script: [{ stallAfterBytes: 10, times: Infinity }] });
    for (let attempt = 0; attempt < 2; attempt++) expect((await get(url, {}, { idleMs: 200 })).body.length).toBe(10);
  });

  test('when a path answers 404 or is unknown, then it is a 404 and the request is still recorded with its headers', async () => {
    const url = source.status('/gone.mp4', 404);
    const res = await get(url, { 'User-Agent': 'fixture-test' });
    expect(res.status).toBe(404);
    expect((await get(source.url('/nothing-here'))).status).toBe(404);
    const [record] = source.requestsFor('/gone.mp4');
    expect(record).toMatchObject({ method: 'GET', path: '/gone.mp4', status: 404 });
    expect(record?.headers['user-agent']).toBe('fixture-test');
  });

  test('when content is served from memory, then its type follows the extension and ranges work', async () => {
    const url = source.content('/list.m3u8', '#EXTM3U\n#EXT-X-ENDLIST\n');
    const res = await get(url, { Range: 'bytes=0-6' });
    expect(res.status).toBe(206);
    expect(res.headers['content-type']).toBe('application/vnd.apple.mpegurl');
    expect(res.body.toString()).toBe('#EXTM3U');
  });

  test('when a directory is served, then every file below it answers at its relative path and folders are not routes', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-fixture-dir-'));
    try {
      await mkdir(path.join(dir, 'video', '240p'), { recursive: true });
      await writeFile(path.join(dir, 'index.m3u8'), '#EXTM3U\n');
      await writeFile(path.join(dir, 'video', '240p', 'seg0.ts'), 'segment zero');
      source.directory('/dir/stream', dir);

      const playlist = await get(source.url('/dir/stream/index.m3u8'));
      expect(playlist.status).toBe(200);
      expect(playlist.headers['content-type']).toBe('application/vnd.apple.mpegurl');
      expect(playlist.body.toString()).toBe('#EXTM3U\n');
      const segment = await get(source.url('/dir/stream/video/240p/seg0.ts'), { Range: 'bytes=0-6' });
      expect(segment.status).toBe(206);
      expect(segment.body.toString()).toBe('segment');
      expect((await get(source.url('/dir/stream/video'))).status).toBe(404);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('when a redirect or a custom route is registered, then it answers as told and counts its requests', async () => {
    const target = source.file('/target.mp4', mediaPath('clip.mp4'));
    source.redirect('/moved.mp4', target, 301);
    const moved = await get(source.url('/moved.mp4'));
    expect(moved.status).toBe(301);
    expect(moved.headers.location).toBe(target);

    source.route('/custom', (_req, res, { count, url }) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`call ${count} ${url.searchParams.get('q')}`);
    });
    await get(source.url('/custom?q=a'));
    const second = await get(source.url('/custom?q=b'));
    expect(second.body.toString()).toBe('call 2 b');
    expect(source.requestsFor('/custom').map((request) => request.url)).toEqual(['/custom?q=a', '/custom?q=b']);
    expect(source.errors).toEqual([]);
  });
});

import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestService, type TestService } from './support/api.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { sha256File } from './support/media.ts';
import { parseRange } from './support/http-ranges.ts';
import { startNginx, type Nginx, type NginxRequest } from './support/nginx.ts';
import { downloaderOf, downloadOneAfterAnother, expectWhole, nextDownload, type Downloader, type Fetched } from './support/real-servers.ts';
import { sizedMedia, type SizedMediaName } from './support/sized-media.ts';
import { watchLargestFile } from './support/largest-file.ts';

// A direct file whose first connection is slow (a per-connection throttle, as most video hosts and
// CDNs have) is fetched over up to DIRECT_CONNECTIONS ranged connections, when its source answers
// ranges of one stable version: the first GET is let go where its piece ends and ranged GETs of the
// same ETag bring the rest. A source that changes the file meanwhile, or refuses some of the ranges,
// still gives a whole file of one version.

/** What each connection of the sources below is held to: the large file (about 20 MB) takes about 5 s over one. */
const BYTES_PER_SECOND = 4 * 1024 * 1024;

let app: TestService;
let single: TestService;
let service: Downloader;
let media: Record<SizedMediaName, string>;
let root: string;
let nginxDir: string;
let nginx: Nginx;
let source: FixtureServer;

beforeAll(async () => {
  [root, nginxDir, media, source] = await Promise.all([
    mkdtemp(path.join(os.tmpdir(), 'vds-connections-root-')),
    mkdtemp(path.join(os.tmpdir(), 'vds-connections-nginx-')),
    sizedMedia(),
    startFixtureServer(),
  ]);
  await Promise.all(['large.mp4', 'six-parts.mp4', 'beyond-split.mp4'].map((name) => symlink(media[name as SizedMediaName], path.join(root, name))));
  [app, single, nginx] = await Promise.all([
    startTestService(),
    startTestService({ directConnections: 1 }),
    startNginx(
      nginxDir,
      `root ${root};\ninclude /etc/nginx/mime.types;\nlimit_rate ${BYTES_PER_SECOND};\nlocation /unthrottled/ { alias ${root}/; limit_rate 0; }`,
      { log: true },
    ),
  ]);
  service = downloaderOf(app);
}, 120_000);

afterAll(async () => {
  await Promise.all([nginx?.stop(), source?.close(), app?.stop(), single?.stop()]);
  await Promise.all([root, nginxDir].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Downloads `url` through `through` and expects the file of `file`, byte for byte, on attempt `attempts`. */
async function expectDownloaded(through: Downloader, url: string, file: string, attempts = 1): Promise<Fetched> {
  const [done] = await downloadOneAfterAnother(through, [url]);
  const fetched = { label: path.basename(file), target: url, source: file, done: done! };
  await expectWhole(through, [fetched], () => attempts);
  return fetched;
}

/** The GETs nginx logged for `target`, once it has written every one it finished (one cut off may be logged a moment later). */
async function loggedGets(target: string): Promise<NginxRequest[]> {
  for (let last = -1; ; await sleep(150)) {
    const gets = (await nginx.requests()).filter((request) => request.method === 'GET' && request.target === target);
    if (gets.length === last) return gets;
    last = gets.length;
  }
}

/** The byte ranges the ranged GETs asked for (first and last byte), in the file's order. */
function rangesAsked(ranged: readonly NginxRequest[]): Array<{ first: number; last: number }> {
  return ranged
    .map(({ range }) => {
      const match = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
      if (!match) throw new Error(`a Range of ${range}, not one byte range with both ends`);
      return { first: Number(match[1]), last: Number(match[2]) };
    })
    .sort((a, b) => a.first - b.first);
}

/** The bytes from the first range (in the file's order) to the file's last that no range asked for. */
function neverAsked(asked: ReadonlyArray<{ first: number; last: number }>, size: number): string[] {
  const faults: string[] = [];
  let reached = (asked[0]?.first ?? size) - 1;
  for (const range of asked) {
    if (range.first > reached + 1) faults.push(`bytes ${reached + 1}-${range.first - 1} never asked for`);
    reached = Math.max(reached, range.last);
  }
  if (reached < size - 1) faults.push(`bytes ${reached + 1}-${size - 1} never asked for`);
  return faults;
}

type Validators = { etag?: string; lastModified?: string };

/** Serves `file` as a CDN would: its validators, Accept-Ranges, a Range honoured when If-Range names one of them, each response throttled. */
async function serveFile(req: IncomingMessage, res: ServerResponse, file: string, version: string | Validators): Promise<void> {
  const { etag, lastModified } = typeof version === 'string' ? { etag: version, lastModified: undefined } : version;
  const size = (await stat(file)).size;
  const ifRange = req.headers['if-range'];
  const honoured = ifRange === undefined || ifRange === etag || ifRange === lastModified;
  const range = req.headers.range && honoured ? parseRange(req.headers.range, size) : undefined;
  if (range === 'unsatisfiable') throw new Error(`no test asks for ${req.headers.range} of ${size} bytes`);
  const { start, end } = range ?? { start: 0, end: size - 1 };
  res.writeHead(range ? 206 : 200, {
    'Content-Type': 'video/mp4',
    'Content-Length': end - start + 1,
    'Accept-Ranges': 'bytes',
    ...(etag && { ETag: etag }),
    ...(lastModified && { 'Last-Modified': lastModified }),
    ...(range && { 'Content-Range': `bytes ${start}-${end}/${size}` }),
  });
  async function* throttled() {
    for await (const chunk of createReadStream(file, { start, end, highWaterMark: 64 * 1024 })) {
      yield chunk as Buffer;
      await sleep(((chunk as Buffer).length / BYTES_PER_SECOND) * 1000);
    }
  }
  // A connection let go where its piece ends is no failure.
  await pipeline(throttled(), res).catch(() => {});
}

test('when nginx throttles each connection (limit_rate) of a 20 MB file, then the download completes on its first attempt over several connections, the first GET let go where ranged GETs of the rest begin, the bytes of the file sent about once', async () => {
  const target = `/large.mp4?download=${nextDownload()}`;
  const { done } = await expectDownloaded(service, nginx.url + target, media['large.mp4']);

  // Logged as each ends: the first GET, let go, may end after ranged ones.
  const gets = await loggedGets(target);
  const [first, ...others] = gets.filter((request) => request.range === undefined);
  const ranged = gets.filter((request) => request.range !== undefined);
  const size = done.file!.size_bytes;
  expect({ first: first?.status, others }).toEqual({ first: 200, others: [] });
  expect(ranged.length).toBeGreaterThan(1);
  expect(ranged.filter((request) => request.status !== 206)).toEqual([]);
  expect(new Set([first, ...ranged].map((request) => request!.connection)).size).toBeGreaterThan(1);
  // The first GET was let go: it sent the bytes before the ranges, and not the whole file.
  const asked = rangesAsked(ranged);
  expect(asked[0]!.first).toBeGreaterThan(0);
  expect(first!.bodyBytes).toBeGreaterThanOrEqual(asked[0]!.first);
  expect(first!.bodyBytes).toBeLessThan(size);
  // The ranges reach from where the first GET was let go to the file's last byte. Near the end an
  // idle connection asks for the second half of a range still running, which is let go there: the
  // bytes sent twice are only those on their way when it was.
  expect(neverAsked(asked, size)).toEqual([]);
  const sent = [first!, ...ranged].reduce((sum, request) => sum + request.bodyBytes, 0);
  expect(sent).toBeGreaterThanOrEqual(size);
  // A connection let go takes the bytes already on their way (socket buffers, and nginx's burst of
  // a second's worth at its start), so up to a quarter more in all.
  expect(sent).toBeLessThan(size * 1.25);
}, 60_000);

test('when nginx serves a 48 MiB file at full speed, then it is shared out from its first answer in pieces of at most 4 MiB (but its last), more than one per connection, and comes whole on its first attempt with its bytes sent about once', async () => {
  const target = `/unthrottled/six-parts.mp4?download=${nextDownload()}`;
  const { done } = await expectDownloaded(service, nginx.url + target, media['six-parts.mp4']);
  const size = done.file!.size_bytes;
  const gets = await loggedGets(target);
  const [first, ...others] = gets.filter((request) => request.range === undefined);
  const ranged = gets.filter((request) => request.range !== undefined);
  expect({ first: first?.status, others }).toEqual({ first: 200, others: [] });
  expect(ranged.filter((request) => request.status !== 206)).toEqual([]);
  // Shared out at once: ranges of its pieces after the first GET's, none of them the file whole.
  expect(ranged.length).toBeGreaterThan(1);
  expect(ranged.map((request) => request.range)).not.toContain(`bytes=0-${size - 1}`);
  const asked = rangesAsked(ranged);
  expect(asked[0]!.first).toBeGreaterThan(0);
  expect(neverAsked(asked, size)).toEqual([]);
  // Small pieces, taken in the file's order, keep it whole from its start close behind the
  // connections, for its hash to follow: more pieces than the eight connections, none over 4 MiB
  // but the file's last (what is left when no whole piece is).
  expect(ranged.length).toBeGreaterThan(8);
  const beforeTheLast = asked.filter(({ last }) => last < size - 1);
  expect(Math.max(...beforeTheLast.map(({ first, last }) => last - first + 1))).toBeLessThanOrEqual(4 * 1024 * 1024);
  expect(first!.bodyBytes).toBeLessThan(size / 2);
  const sent = gets.reduce((sum, request) => sum + request.bodyBytes, 0);
  expect(sent).toBeLessThan(size * 1.25);
}, 60_000);

test('when nginx serves a 260 MiB file at full speed, then the first GET is let go once a ranged GET of the whole file has answered, and the file comes whole on its first attempt with its bytes sent about once', async () => {
  const target = `/unthrottled/beyond-split.mp4?download=${nextDownload()}`;
  // Checked where it is kept: a client of the tests reads no answer this large.
  const [done] = await downloadOneAfterAnother(service, [nginx.url + target]);
  const source = media['beyond-split.mp4'];
  const sha256 = await sha256File(source);
  expect({ status: done!.status, attempts: done!.attempts, sha256: done!.file?.sha256 }).toEqual({ status: 'completed', attempts: 1, sha256 });
  expect(await sha256File(path.join(service.dataDir, 'files', done!.id))).toBe(sha256);
  const size = done!.file!.size_bytes;
  expect(size).toBe((await stat(source)).size);
  const gets = await loggedGets(target);
  const [first, again, ...others] = gets.sort((a, b) => a.connection - b.connection);
  // The rest is read into reused buffers over a connection of its own (bulk-get.ts); on a busy
  // machine it may look slow enough to be shared out further, into ranges of its own.
  expect({ first: first?.status, firstRange: first?.range, again: again?.status, againRange: again?.range }).toEqual({
    first: 200,
    firstRange: undefined,
    again: 206,
    againRange: `bytes=0-${size - 1}`,
  });
  expect(others.filter((request) => request.status !== 206 || request.range === undefined)).toEqual([]);
  const sent = gets.reduce((sum, request) => sum + request.bodyBytes, 0);
  // The first GET sent what its socket buffers held before it was let go.
  expect(first!.bodyBytes).toBeLessThan(size / 4);
  expect(sent).toBeLessThan(size * 1.25);
}, 120_000);

test('when DIRECT_CONNECTIONS=1 and nginx throttles each connection of a 20 MB file, then the download comes over one GET', async () => {
  const target = `/large.mp4?download=${nextDownload()}`;
  const { done } = await expectDownloaded(downloaderOf(single), nginx.url + target, media['large.mp4']);
  const gets = await loggedGets(target);
  expect(gets.map(({ status, range, bodyBytes }) => ({ status, range, bodyBytes }))).toEqual([
    { status: 200, range: undefined, bodyBytes: done.file!.size_bytes },
  ]);
}, 60_000);

test('when the source switches to another file with another ETag once its first ranged request arrives, then the download completes on a later attempt with exactly the new file, never a splice of the two', async () => {
  const [v1, v2] = [media['large.mp4'], media['few-mb.mp4']];
  let current = { file: v1, etag: '"v1"' };
  const url = source.route('/switching.mp4', async (req, res) => {
    const serving = current;
    if (req.headers.range) current = { file: v2, etag: '"v2"' };
    await serveFile(req, res, serving.file, serving.etag);
  });

  // The first attempt meets v2 in a piece and fails; the next sees the change through If-Range and starts over.
  await expectDownloaded(service, url, v2, 2);
  const asked = source
    .requestsFor('/switching.mp4')
    .map((request) => `${request.range ? `ranged, If-Range ${String(request.headers['if-range'])}` : 'plain'}: ${request.status}`);
  // The file was being fetched in pieces when it changed: the first ranged request had a 206 of v1;
  // every later one (a piece of the first attempt, the resumption of the next) met v2 instead.
  expect(asked.slice(0, 2)).toEqual(['plain: 200', 'ranged, If-Range "v1": 206']);
  expect(asked.length).toBeGreaterThanOrEqual(4);
  expect(asked.slice(2)).toEqual(asked.slice(2).map(() => 'ranged, If-Range "v1": 200'));
}, 60_000);

test('when the source answers 503 to every ranged request after the first, then the download completes whole on its first attempt', async () => {
  const file = media['large.mp4'];
  let ranged = 0;
  const url = source.route('/one-range.mp4', async (req, res) => {
    if (req.headers.range && ++ranged > 1) res.writeHead(503, { 'Retry-After': '1' }).end();
    else await serveFile(req, res, file, '"v1"');
  });

  await expectDownloaded(service, url, file);
  const asked = source.requestsFor('/one-range.mp4').map((request) => `${request.range ? 'ranged' : 'plain'} ${request.status}`);
  // The file was shared out, and connections were refused: the ones left brought their pieces.
  expect(asked.slice(0, 2)).toEqual(['plain 200', 'ranged 206']);
  expect(asked.slice(2)).toContain('ranged 503');
  expect(asked.slice(2).filter((one) => one !== 'ranged 503')).toEqual([]);
}, 60_000);

test('when the source changes only its weak ETag while Last-Modified stays, then the file comes whole over one connection, never a splice of two versions', async () => {
  const a = media['large.mp4'];
  // The same length, two bytes apart: a splice would pass every check of length and container.
  const bytes = await readFile(a);
  for (const at of [2_000_000, 15_000_000]) bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
  const b = path.join(root, 'large-b.mp4');
  await writeFile(b, bytes);
  const lastModified = 'Tue, 01 Oct 2024 10:00:00 GMT';
  let served = 0;
  const url = source.route('/weak-flip.mp4', async (req, res) => {
    const [file, etag] = served++ === 0 ? [a, 'W/"v1"'] : [b, 'W/"v2"'];
    await serveFile(req, res, file, { etag, lastModified });
  });

  // A weak ETag promises no two ranges of one version are the same bytes: nothing is asked in pieces.
  await expectDownloaded(service, url, a);
  expect(source.requestsFor('/weak-flip.mp4').map((request) => request.range)).toEqual([undefined]);
}, 60_000);

test('when a retry’s range meets a 416 that gives the file as long as the bytes kept, shorter than it began, then the file starts over rather than completing short', async () => {
  const file = media['large.mp4'];
  const cut = 3 * 1024 * 1024;
  let served = 0;
  const url = source.route('/shrunk.mp4', async (req, res) => {
    served += 1;
    if (served === 1) {
      // The first answer stops after 3 MiB, all of which reach the service, then resets.
      res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': (await stat(file)).size, 'Accept-Ranges': 'bytes', ETag: '"v1"' });
      res.write((await readFile(file)).subarray(0, cut));
      await sleep(1500);
      res.destroy();
    } else if (served === 2) {
      res.writeHead(416, { 'Content-Range': `bytes */${cut}` }).end();
    } else {
      await serveFile(req, res, file, '"v1"');
    }
  });

  await expectDownloaded(downloaderOf(single), url, file, 2);
  expect(source.requestsFor('/shrunk.mp4').map((request) => request.range)).toEqual([undefined, `bytes=${cut}-`, undefined]);
}, 60_000);

test('when the source answers a plain GET with a range that does not start the file, then the download fails as the source’s error, its bytes never written where the file starts', async () => {
  const file = media['large.mp4'];
  const size = (await stat(file)).size;
  const url = source.route('/offset.mp4', async (_req, res) => {
    res.writeHead(206, { 'Content-Type': 'video/mp4', 'Content-Range': `bytes 1000-${size - 1}/${size}`, 'Content-Length': size - 1000, ETag: '"v1"' });
    res.end((await readFile(file)).subarray(1000));
  });

  // Watched as it runs: a file that took the bytes and was then removed would look the same afterwards.
  const largest = watchLargestFile(path.join(app.config.dataDir, 'partial'));
  const created = await app.http.createDownload({ url });
  const done = await app.waitForStatus((created.body as { id: string }).id, ['failed']);
  expect(await largest.stop()).toBe(0);
  expect(done.error).toMatchObject({ code: 'source_http_error' });
}, 60_000);

import { rm } from 'node:fs/promises';
import { get } from 'node:http';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { makeDataDir, type Download } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { openEventStream } from './support/event-stream.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { prepareHlsFixtures, serveHlsFixture } from './support/streams/hls-fixtures.ts';
import { sizedMedia } from './support/sized-media.ts';
import { waitFor } from './support/waiting.ts';

// What whoever runs the service sees: /healthz and /metrics (readiness through a database restart
// is in database-restart.test.ts), and the log of a real process, read as the operator reads it.

const API_KEY = 'operations-test-key-5c1b';
const ADMIN_KEY = 'operations-admin-key-8e2f';

let database: TestDatabase;
let dataDir: string;
let source: FixtureServer;
let app: ServiceProcess;

beforeAll(async () => {
  [database, dataDir, source] = await Promise.all([createTestDatabase(), makeDataDir(), startFixtureServer()]);
  app = await spawnServiceProcess({
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    API_KEYS: API_KEY,
    ADMIN_API_KEYS: ADMIN_KEY,
    LOG_LEVEL: 'info',
    MAX_EVENT_STREAMS: '1',
  });
});

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const withKey = { Authorization: `Bearer ${API_KEY}` };

/** The JSON lines the process has logged so far. */
function logLines(): Record<string, unknown>[] {
  return app
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function completed(id: string): Promise<Download> {
  return waitFor(
    'completed',
    async () => {
      const now = (await app.http.getDownload(id, withKey)).body as Download;
      return now.status === 'completed' ? now : undefined;
    },
    30_000,
  );
}

async function metrics(): Promise<ReturnType<typeof parsePrometheusTextFormat>> {
  const res = await app.http.request('GET', '/metrics', '/metrics', { headers: withKey });
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  // The whole text must parse, not only the lines this test looks at.
  return parsePrometheusTextFormat(res.text);
}

function valueOf(families: ReturnType<typeof parsePrometheusTextFormat>, name: string, labels: Record<string, string> = {}): number {
  const family = families.find((candidate) => candidate.name === name);
  const sample = family?.metrics.find((metric) => Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value));
  return sample ? Number(sample.value) : 0;
}

test('when /healthz is asked, then it answers without a key; /metrics needs one', async () => {
  expect((await app.http.request('GET', '/healthz', '/healthz')).body).toEqual({ status: 'ok' });
  // yt_dlp: the version of the yt-dlp on PATH (CI installs Debian's), which the process found itself.
  expect((await app.http.request('GET', '/readyz', '/readyz')).body).toEqual({ status: 'ready', yt_dlp: expect.stringMatching(/^\d{4}\.\d{2}\.\d{2}/) });
  expect((await app.http.request('GET', '/metrics', '/metrics')).status).toBe(401);
});

test('when a download completes, then the metrics count it, its bytes and its duration, and the log tells its phases', async () => {
  const before = await metrics();
  const created = await app.http.createDownload({ url: source.file('/counted.mp4', mediaPath('clip.mp4')) }, { ...withKey, 'X-Request-Id': 'ops-create-1' });
  expect(created.headers['x-request-id']).toBe('ops-create-1');
  const id = (created.body as Download).id;
  const done = await completed(id);
  const file = await app.http.getFile(done.token!);
  expect(file.status).toBe(200);

  const after = await metrics();
  expect(valueOf(after, 'vds_downloads_created_total') - valueOf(before, 'vds_downloads_created_total')).toBe(1);
  const finished = { status: 'completed', source: 'direct' };
  expect(valueOf(after, 'vds_downloads_finished_total', finished) - valueOf(before, 'vds_downloads_finished_total', finished)).toBe(1);
  expect(valueOf(after, 'vds_download_bytes_total', { source: 'direct' }) - valueOf(before, 'vds_download_bytes_total', { source: 'direct' })).toBe(
    done.file!.size_bytes,
  );
  // (This parser drops the labels of histogram series, so histograms are checked for their kind only.)
  for (const name of ['vds_download_duration_seconds', 'vds_http_request_duration_seconds']) {
    expect(after.find((family) => family.name === name)?.type).toBe('HISTOGRAM');
  }
  expect(after.find((family) => family.name === 'vds_jobs')?.metrics.some((metric) => metric.labels?.queue === 'download')).toBe(true);
  expect(after.find((family) => family.name === 'process_resident_memory_bytes')).toBeDefined();

  const lines = logLines();
  const mine = lines.filter((line) => line.download_id === id);
  expect(mine.map((line) => line.phase).filter(Boolean)).toEqual(['resolve', 'fetch', 'probe', 'store']);
  expect(mine.map((line) => line.status).filter(Boolean)).toEqual(['downloading', 'processing', 'completed']);
  for (const line of mine.filter((candidate) => candidate.phase)) expect(line.duration_ms).toEqual(expect.any(Number));
  expect(lines.find((line) => (line.req as { id?: string } | undefined)?.id === 'ops-create-1')).toMatchObject({
    req: { method: 'POST', url: '/downloads' },
    res: { status: 202 },
  });

  // What opens a door is in no line: not the key, not the file's token, not its link.
  expect(app.output()).not.toContain(API_KEY);
  expect(app.output()).not.toContain(done.token!);
  expect(lines.some((line) => (line.req as { url?: string } | undefined)?.url === '/download/[token]')).toBe(true);
});

test('when a download fails after its source kind was found, then the metrics count the failure under that kind; one that failed before, under unknown', async () => {
  const failedAs = { status: 'failed', source: 'direct' };
  const failedUnknown = { status: 'failed', source: 'unknown' };
  const before = await metrics();
  // A file that starts like an MP4 (so it is read as a direct file) and is none.
  const noise = Buffer.alloc(64 * 1024, 7);
  noise.write('\x00\x00\x00\x18ftypisom', 0, 'latin1');
  const notMedia = (await app.http.createDownload({ url: source.content('/noise.mp4', noise) }, withKey)).body as Download;
  const missing = (await app.http.createDownload({ url: source.status('/missing.mp4', 404) }, withKey)).body as Download;
  const ended = async (id: string) =>
    waitFor(
      'failed',
      async () => {
        const now = (await app.http.getDownload(id, withKey)).body as Download;
        return now.status === 'failed' ? now : undefined;
      },
      30_000,
    );
  expect(await ended(notMedia.id)).toMatchObject({ error: { code: 'unsupported_source' }, source: { kind: 'direct' } });
  expect(await ended(missing.id)).toMatchObject({ error: { code: 'source_http_error' }, source: null });

  const after = await metrics();
  expect(valueOf(after, 'vds_downloads_finished_total', failedAs) - valueOf(before, 'vds_downloads_finished_total', failedAs)).toBe(1);
  expect(valueOf(after, 'vds_downloads_finished_total', failedUnknown) - valueOf(before, 'vds_downloads_finished_total', failedUnknown)).toBe(1);
});

test('when a running download is cancelled after its source kind was found, then the metrics count it under that kind', async () => {
  const cancelledAs = { status: 'cancelled', source: 'direct' };
  const before = await metrics();
  const created = (await app.http.createDownload({ url: source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: 256 * 1024 }) }, withKey))
    .body as Download;
  await waitFor('the source kind', async () => ((await app.http.getDownload(created.id, withKey)).body as Download).source?.kind === 'direct', 15_000);
  expect((await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}', { headers: withKey })).body).toMatchObject({
    status: 'cancelled',
  });
  const after = await metrics();
  expect(valueOf(after, 'vds_downloads_finished_total', cancelledAs) - valueOf(before, 'vds_downloads_finished_total', cancelledAs)).toBe(1);
});

test('when file links are asked for, then the request metrics count them by their operation and the log has a line for each', async () => {
  const created = await app.http.createDownload({ url: source.file('/served.mp4', mediaPath('clip.mp4')) }, withKey);
  const { token } = await completed((created.body as Download).id);
  const countOf = (text: string, operation: string, status: string) =>
    Number(new RegExp(`vds_http_request_duration_seconds_count\\{operation="${operation}",status="${status}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  const counts = (text: string) => [countOf(text, 'getFile', '206'), countOf(text, 'headFile', '200'), countOf(text, 'getFile', '404')];
  const before = counts((await app.http.request('GET', '/metrics', '/metrics', { headers: withKey })).text);
  const sent: { id: string; method: string; token: string; headers: Record<string, string>; status: number }[] = [
    { id: 'ops-file-range', method: 'GET', token: token!, headers: { Range: 'bytes=0-99' }, status: 206 },
    { id: 'ops-file-head', method: 'HEAD', token: token!, headers: {}, status: 200 },
    { id: 'ops-file-unknown', method: 'GET', token: 'AAAAAAAAAAAAAAAAAAAAAA.secret', headers: {}, status: 404 },
  ];
  for (const request of sent) {
    const res = await fetch(`${app.url}/download/${request.token}`, { method: request.method, headers: { ...request.headers, 'X-Request-Id': request.id } });
    await res.arrayBuffer();
    expect([request.id, res.status, res.headers.get('x-request-id')]).toEqual([request.id, request.status, request.id]);
  }
  const after = counts((await app.http.request('GET', '/metrics', '/metrics', { headers: withKey })).text);
  expect(after.map((count, i) => count - before[i]!)).toEqual([1, 1, 1]);
  for (const request of sent) {
    const line = await waitFor(request.id, () => logLines().find((entry) => (entry.req as { id?: string } | undefined)?.id === request.id), 5_000);
    expect(line).toMatchObject({ req: { method: request.method, url: '/download/[token]' }, res: { status: request.status } });
  }
});

test('when a client hangs up mid-file, then the log line of its request says the transfer was cut short', async () => {
  const large = (await sizedMedia())['large.mp4'];
  const created = await app.http.createDownload({ url: source.file('/cut.mp4', large) }, withKey);
  const { token } = await completed((created.body as Download).id);
  const whole = await fetch(`${app.url}/download/${token}`, { headers: { 'X-Request-Id': 'ops-file-whole' } });
  await whole.arrayBuffer();
  await hangUpMidFile(`${app.url}/download/${token}`, 'ops-file-cut');
  const lineOf = (id: string) => waitFor(id, () => logLines().find((entry) => (entry.req as { id?: string } | undefined)?.id === id), 5_000);
  expect(await lineOf('ops-file-cut')).toMatchObject({ res: { status: 200, aborted: true }, msg: expect.stringContaining('cut short') });
  const complete = await lineOf('ops-file-whole');
  expect(complete).toMatchObject({ res: { status: 200 } });
  expect(complete.res).not.toHaveProperty('aborted');
});

test('when a client leaves a preview before its answer, then the reading of the source stops, and the log holds no error for it', async () => {
  let closed = false;
  const feed = source.route('/left-feed.xml', (_req, res) => {
    // A feed that sends its start and then nothing, until the reading lets go of it.
    res.writeHead(200, { 'content-type': 'application/rss+xml' }).write('<rss><channel><title>Waiting</title>');
    res.on('close', () => (closed = true));
  });
  const controller = new AbortController();
  const preview = fetch(`${app.url}/collections/preview`, {
    method: 'POST',
    headers: { ...withKey, 'Content-Type': 'application/json', 'X-Request-Id': 'ops-preview-left' },
    body: JSON.stringify({ url: feed }),
    signal: controller.signal,
  });
  await waitFor('the feed to be asked for', () => source.requestsFor('/left-feed.xml').length === 1, 5_000);
  controller.abort();
  await expect(preview).rejects.toThrow();
  await waitFor('the feed connection to close', () => closed, 5_000);
  const mine = () => logLines().filter((entry) => (entry.req as { id?: string } | undefined)?.id === 'ops-preview-left');
  await waitFor('the request line', () => mine().some((entry) => (entry.msg as string).startsWith('POST /collections/preview')), 5_000);
  expect(mine().filter((entry) => (entry.level as number) >= 50 || 'err' in entry)).toEqual([]);
});

test('when an HLS stream completes, then its last line says how many segments came, how many were retried, and the slowest', async () => {
  const hls = await prepareHlsFixtures();
  const created = await app.http.createDownload({ url: serveHlsFixture(source, hls.ts, '/hls/ts') }, withKey);
  const id = (created.body as Download).id;
  await completed(id);
  const last = await waitFor('the completed line', () => logLines().find((line) => line.download_id === id && line.status === 'completed'), 5_000);
  expect(last).toMatchObject({ source: 'hls', segments: { count: 4, retried: 0, slowest_ms: expect.any(Number) } });
});

test('when a token or key is sent in odd places, then no log line holds it', async () => {
  const created = await app.http.createDownload({ url: source.file('/odd.mp4', mediaPath('clip.mp4')) }, withKey);
  const { token } = await completed((created.body as Download).id);
  // Express routes paths in any case; each of these reaches the file route or a 404.
  const paths = [`/DOWNLOAD/${token}`, `/Download/${token}?x=1`, `/download//${token}`, `/download%2F${token}`, `/download/${token!.replace('.', '%2E')}`];
  for (const odd of paths) await fetch(`${app.url}${odd}`);
  await fetch(`${app.url}/healthz?token=${token}`);
  await fetch(`${app.url}/healthz?api_key=${API_KEY}`);
  await fetch(`${app.url}/healthz`, { headers: { 'X-Request-Id': token! } });
  await fetch(`${app.url}/downloads?api_key=${ADMIN_KEY}`, { headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
  await fetch(`${app.url}/downloads`, { headers: { Authorization: `Bearer ${ADMIN_KEY}x` } });
  // A known key wherever a client may put it: a query parameter of any name, a path segment (in
  // part percent-encoded), the request id.
  await fetch(`${app.url}/healthz?authorization=Bearer%20${API_KEY}`);
  await fetch(`${app.url}/downloads?q=${ADMIN_KEY}`, { headers: withKey });
  await fetch(`${app.url}/downloads/${API_KEY}`, { headers: withKey });
  await fetch(`${app.url}/downloads/${ADMIN_KEY.replace('-', '%2d').replace('a', '%61')}`, { headers: withKey });
  await fetch(`${app.url}/healthz`, { headers: { 'X-Request-Id': API_KEY } });
  await fetch(`${app.url}/healthz`, { headers: { 'X-Request-Id': `req-${ADMIN_KEY}` } });
  // An unknown value under a parameter named like a credential.
  const guesses = ['guessed-secret-0a1', 'guessed-secret-0a2', 'guessed-secret-0a3', 'guessed-secret-0a4'];
  await fetch(`${app.url}/healthz?x=1&authorization=${guesses[0]}&APIKEY=${guesses[1]}`);
  await fetch(`${app.url}/downloads?access_token=${guesses[2]};client_secret=${guesses[3]}`, { headers: withKey });
  const scraped = await app.http.request('GET', '/metrics', '/metrics', { headers: { Authorization: `Bearer ${ADMIN_KEY}` } });
  expect(scraped.status).toBe(200);
  const secret = token!.split('.')[1]!;
  await waitFor('the last request line', () => app.output().includes('GET /metrics 200'), 5_000);
  for (const kept of [secret, API_KEY, ADMIN_KEY, ...guesses]) {
    expect(app.output()).not.toContain(kept);
    expect(scraped.text).not.toContain(kept);
  }
});

test('when a source URL carries a user name and password, then neither its failure message nor the log holds them', async () => {
  const page = new URL(source.content('/no-media.html', '<!doctype html><title>No media here</title>', { headers: { 'Content-Type': 'text/html' } }));
  page.username = 'source-user-71c';
  page.password = 'source-password-9d4e';
  const created = await app.http.createDownload({ url: page.href }, withKey);
  expect(created.status).toBe(202);
  const id = (created.body as Download).id;
  const failed = await waitFor('the failure', async () => {
    const download = (await app.http.getDownload(id, withKey)).body as Download;
    return download.status === 'failed' ? download : undefined;
  });
  expect(failed.error!.message).toContain(`http://${page.host}/no-media.html`);
  await waitFor('the failure line', () => logLines().find((line) => line.download_id === id && line.status === 'failed'), 5_000);
  for (const kept of [page.username, page.password]) {
    expect(failed.error!.message).not.toContain(kept);
    expect(app.output()).not.toContain(kept);
  }
});

test('when an event stream is refused at the stream limit, then the log warns of the 503, without an error stack', async () => {
  const created = await app.http.createDownload({ url: source.file('/limit.mp4', mediaPath('clip.mp4'), { script: [{ delayMs: 10_000 }] }) }, withKey);
  const id = (created.body as Download).id;
  const held = await openEventStream(app.url, id, withKey);
  const refused = await openEventStream(app.url, id, withKey);
  expect([held.status, refused.status]).toEqual([200, 503]);
  held.close();
  const line = await waitFor('the 503 line', () => logLines().find((entry) => entry.msg === `GET /downloads/${id} 503`), 5_000);
  expect(line).toMatchObject({ level: 40, res: { status: 503 } });
  expect(line).not.toHaveProperty('err');
  await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}', { headers: withKey });
});

test('when the operations endpoints are asked, then their request durations carry the contract operationIds', async () => {
  await fetch(`${app.url}/healthz`, { method: 'HEAD' });
  await fetch(`${app.url}/readyz`);
  const res = await app.http.request('GET', '/metrics', '/metrics', { headers: withKey });
  for (const id of ['getHealth', 'getReadiness']) expect(res.text).toMatch(new RegExp(`vds_http_request_duration_seconds_count\\{[^}]*operation="${id}"`));
});

/** Asks for the whole file, and goes away once the first bytes of its body have come. */
function hangUpMidFile(url: string, requestId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: { 'X-Request-Id': requestId } }, (res) => {
      res.once('data', () => {
        // The response's socket goes with it, while the service is still sending.
        res.destroy();
        resolve();
      });
    });
    req.once('error', reject);
  });
}

import { rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { startService, type Service } from '../src/service.ts';
import { createHttp, makeDataDir, pollStatus, testConfig, type Download, type TestHttp } from './support/api.ts';
import { openEventStream } from './support/event-stream.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { query } from './support/queue.ts';
import { waitFor, waitForProgress, within } from './support/waiting.ts';

// The service's own PostgreSQL, which this file stops and starts again under a running service;
// the shared test server cannot be restarted without disturbing every other test file.

let databaseDir: string;
let dataDir: string;
let databasePort: number;
let database: EmbeddedDatabase | undefined;
const databaseLog: string[] = [];
let service: Service | undefined;
let http: TestHttp;
let source: FixtureServer;

async function startDatabase(): Promise<EmbeddedDatabase> {
  try {
    return await startEmbeddedPostgres(databaseDir, { port: databasePort, log: (line) => databaseLog.push(line) });
  } catch (error) {
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${databaseLog.slice(-20).join('')}`);
  }
}

beforeAll(async () => {
  databaseDir = await makeDataDir();
  dataDir = await makeDataDir();
  databasePort = await getPort({ host: '127.0.0.1' });
  database = await startDatabase();
  source = await startFixtureServer();
  service = await startService(testConfig(database.url, dataDir));
  http = createHttp(service.url);
});

afterAll(async () => {
  await service?.stop();
  await source?.close();
  await database?.stop();
  await Promise.all([databaseDir, dataDir].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function createDownload(url: string): Promise<string> {
  const created = await http.createDownload({ url });
  expect(created.status).toBe(202);
  return (created.body as Download).id;
}

test('when PostgreSQL restarts while downloads run, then they complete, new ones complete, an event stream follows one to the end, a create during the outage is a 503 problem, and readiness follows the database', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  // One transfer ends while the database is down, so that recording its end has to wait for the
  // database; the other ends after the database is back.
  const endsDuringOutage = await createDownload(source.file('/during.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 2) }));
  const endsAfterOutage = await createDownload(source.file('/after.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 6) }));
  await waitForProgress(http, endsDuringOutage, size / 4);
  // A client following a download through the outage: the process's listening connection is lost
  // with the database, and the stream must pick the changes up again once it is back.
  const stream = await openEventStream(service!.url, endsAfterOutage);
  await stream.waitForEvents(1);

  await database!.stop();
  database = undefined;
  const duringOutage = await within(
    5_000,
    'POST /downloads while the database is down',
    http.createDownload({ url: source.file('/never.mp4', mediaPath('clip.mp4')) }),
  );
  expect(duringOutage.status).toBe(503);
  expect(Number(duringOutage.headers['retry-after'])).toBeGreaterThan(0);
  expect(duringOutage.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(duringOutage.body).toMatchObject({ status: duringOutage.status });
  // A load balancer sees the process alive but not ready.
  expect((await http.request('GET', '/healthz', '/healthz')).body).toEqual({ status: 'ok' });
  const notReady = await within(5_000, 'GET /readyz while the database is down', http.request('GET', '/readyz', '/readyz'));
  expect(notReady.status).toBe(503);
  expect(notReady.headers['content-type']).toMatch(/^application\/problem\+json/);
  // The scrape still answers, without the queue's series, which need the database.
  const scraped = await within(5_000, 'GET /metrics while the database is down', http.request('GET', '/metrics', '/metrics'));
  expect(scraped.status).toBe(200);
  expect(scraped.text).toContain('process_resident_memory_bytes');
  expect(scraped.text).not.toMatch(/^vds_jobs\{/m);
  await waitFor('the first transfer to end', () => source.requestsFor('/during.mp4')[0]?.outcome === 'complete', 10_000);
  // Long enough for the worker to reach the database, and find it gone, with the finished file.
  await sleep(1_000);
  database = await startDatabase();
  await waitFor('ready again', async () => (await http.request('GET', '/readyz', '/readyz')).status === 200, 15_000);

  const expected = await sha256File(mediaPath('big.mp4'));
  for (const [id, routePath] of [
    [endsDuringOutage, '/during.mp4'],
    [endsAfterOutage, '/after.mp4'],
  ] as const) {
    const done = await pollStatus(http, id, ['completed'], 40_000);
    expect(done.file?.sha256).toBe(expected);
    // Whatever had to be run again, the bytes already on disk were not fetched a second time.
    expect(source.requestsFor(routePath).reduce((sum, request) => sum + request.bytesSent, 0)).toBe(size);
  }
  await within(10_000, 'the event stream to end', stream.ended);
  expect(stream.events.at(-1)!.download).toMatchObject({ id: endsAfterOutage, status: 'completed' });
  const afterRestart = await createDownload(source.file('/later.mp4', mediaPath('clip.mp4')));
  const later = await pollStatus(http, afterRestart, ['completed'], 20_000);
  expect(later.file?.sha256).toBe(await sha256File(mediaPath('clip.mp4')));
  expect((await http.getDownload(endsDuringOutage)).status).toBe(200);
  // The create that failed left neither a row nor a job that could fetch the file later.
  const neverUrl = source.url('/never.mp4');
  expect(await query(database.url, 'SELECT id FROM downloads WHERE url = $1', [neverUrl])).toEqual([]);
  const jobs = await query<{ download_id: string }>(database.url, "SELECT data->>'download_id' AS download_id FROM pgboss.job WHERE name = 'download'");
  expect(jobs.map((job) => job.download_id).sort()).toEqual([endsDuringOutage, endsAfterOutage, afterRestart].sort());
  expect(source.requestsFor('/never.mp4')).toHaveLength(0);
}, 60_000);

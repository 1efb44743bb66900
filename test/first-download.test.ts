import { rm } from 'node:fs/promises';
import { makeDataDir, type Download } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { waitFor } from './support/waiting.ts';

// What a service just started does on its first requests must not hold its event loop: the
// validator compiled each operation on its first request (all of the contract on the very first),
// and a download's first file name loaded ICU's rules, some 90 ms of the main thread's work in
// one piece, and 250 to 450 ms of a client's wait on a loaded machine. No stall on the API's
// process may exceed 50 ms. The process is probed from inside (support/loop-probe.ts), by the
// main thread's own CPU time, which a busy machine does not stretch: the same stall measured by
// the clock (monitorEventLoopDelay) went from 40 to 250 ms with the load of the other tests.

const MAX_STALL_MS = 50;
/** How support/loop-probe.ts starts its lines (not imported from it: that would probe this process). */
const PROBE_PREFIX = 'loop-probe ';

let database: TestDatabase;
let dataDir: string;
let source: FixtureServer;
let app: ServiceProcess;

beforeAll(async () => {
  [database, dataDir, source] = await Promise.all([createTestDatabase(), makeDataDir(), startFixtureServer()]);
  app = await spawnServiceProcess({ DATABASE_URL: database.url, DATA_DIR: dataDir, ALLOW_PRIVATE_ADDRESSES: 'true' }, 60_000, {
    preload: ['test/support/loop-probe.ts'],
    // Not a request before the test's own: the first ones are what is measured.
    readyWhenLogged: true,
  });
});

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

type Report = { cpuMs?: number; wallMs?: number; unavailable?: string; alive?: true };

/** What the probe reported in the process's output after `from` characters. */
function reportsSince(from: number): Report[] {
  return app
    .output()
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith(PROBE_PREFIX))
    .map((line) => JSON.parse(line.slice(PROBE_PREFIX.length)) as Report);
}

test('when a service just started runs its first download, then no stall of its event loop exceeds 50 ms of work', async () => {
  const url = source.file('/first/clip.mp4', mediaPath('clip.mp4'));
  // Let the start-up settle (the queue's first maintenance, the first pool connections).
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const from = app.output().length;

  // The requests a client makes on its first download: create, follow, list, fetch the file.
  const created = await app.http.createDownload({ url, filename: 'Première vidéo' }, { 'Content-Type': 'application/json; charset=utf-8' });
  expect(created.status).toBe(202);
  const done = await app.waitForStatus((created.body as Download).id, ['completed', 'failed']);
  expect(done).toMatchObject({ status: 'completed' });
  expect((await app.http.request('GET', '/downloads?limit=10', '/downloads')).status).toBe(200);
  expect((await app.http.getFile(done.download_url!)).status).toBe(200);
  // A sign of life after the last request: the probe ran all along, and its last report is in.
  const end = app.output().length;
  await waitFor('the probe to tick after the last request', () => reportsSince(end).some((report) => report.alive), 5_000);

  const reports = reportsSince(from);
  expect(reports.filter((report) => report.unavailable)).toEqual([]);
  expect(reports.filter((report) => (report.cpuMs ?? 0) > MAX_STALL_MS)).toEqual([]);
});

import { rm, stat } from 'node:fs/promises';
import { makeDataDir, type Download } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

// The deployment of many processes: one API and two workers on one database and one DATA_DIR, as
// `npm run start:api` and `npm run start:worker` run them. A worker killed with kill -9 leaves its
// downloads to the other, which resumes them from their partial files once their leases run out.

const DOWNLOADS = 4;
/** A killed worker's lease holds 30 s after its last renewal; then the other worker takes over. */
const TAKEOVER_MS = 90_000;

let database: TestDatabase;
let dataDir: string;
let source: FixtureServer;

beforeAll(async () => {
  [database, dataDir, source] = await Promise.all([createTestDatabase(), makeDataDir(), startFixtureServer()]);
});

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function start(role: 'api' | 'worker'): Promise<ServiceProcess> {
  return spawnServiceProcess({
    ROLE: role,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
    RETRY_DELAY_SECONDS: '1',
    // Two each, so that four downloads at once must spread over both workers.
    WORKER_CONCURRENCY: '2',
    LOG_LEVEL: 'info',
  });
}

/** The downloads a worker's log says it started. */
function startedBy(worker: ServiceProcess): Set<string> {
  const ids = worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { download_id?: string; status?: string })
    .filter((line) => line.status === 'downloading' && line.download_id)
    .map((line) => line.download_id!);
  return new Set(ids);
}

test('when one of two workers is killed with kill -9 mid-download, then every download completes with its sha256, the killed ones resumed by the other worker', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const [api, first, second] = await Promise.all([start('api'), start('worker'), start('worker')]);
  const paths = Array.from({ length: DOWNLOADS }, (_, index) => `/spread-${index}.mp4`);
  const ids: string[] = [];
  for (const routePath of paths) {
    const created = await api.http.createDownload({ url: source.file(routePath, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 10) }) });
    expect(created.status).toBe(202);
    ids.push((created.body as Download).id);
  }
  await waitFor('both workers to run two downloads each', () => startedBy(first).size === 2 && startedBy(second).size === 2, 30_000);
  const killed = [...startedBy(first)];
  await Promise.all(killed.map((id) => waitForProgress(api.http, id, size / 5)));

  await first.kill('SIGKILL');
  const fetchedBeforeKill = new Map(killed.map((id) => [id, 0]));
  for (const [index, id] of ids.entries()) {
    if (!killed.includes(id)) continue;
    await waitFor('the fixture to see the connection drop', () => source.requestsFor(paths[index]!)[0]?.outcome !== undefined);
    fetchedBeforeKill.set(id, source.requestsFor(paths[index]!)[0]!.bytesSent);
  }

  const expected = await sha256File(mediaPath('big.mp4'));
  for (const [index, id] of ids.entries()) {
    const done = await api.waitForStatus(id, ['completed'], TAKEOVER_MS);
    expect(done.file?.sha256).toBe(expected);
    const sent = source.requestsFor(paths[index]!).reduce((sum, request) => sum + request.bytesSent, 0);
    if (killed.includes(id)) {
      // Resumed from its partial file by the other worker: what came again is what the kill cut
      // off in flight, not the file anew.
      expect(startedBy(second).has(id)).toBe(true);
      expect(source.requestsFor(paths[index]!).length).toBeGreaterThan(1);
      expect(sent - size).toBeLessThan(fetchedBeforeKill.get(id)! * 0.5 + 1024 * 1024);
    } else {
      expect(sent).toBe(size);
    }
  }
}, 180_000);

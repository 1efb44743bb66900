import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { makeDataDir, type Download } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { sha256File } from './support/media.ts';
import { startS3Server, type S3Server } from './support/s3-server.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { sizedMedia } from './support/sized-media.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

// Machines that share only a PostgreSQL URL and a bucket: an API and two workers, each with a
// DATA_DIR and a TMPDIR of its own. The worker running a direct download is killed with kill -9
// part-way; the other takes the download over from the parts its upload has recorded, without the
// bytes the first one fetched (they are on the first machine's disk, and in the bucket).

const PART_BYTES = 8 * 1024 * 1024;
/** A killed worker's lease holds 30 s after its last renewal; then the other worker takes over. */
const TAKEOVER_MS = 90_000;

let database: TestDatabase;
let s3: S3Server;
let source: FixtureServer;
const machines: string[] = [];

beforeAll(async () => {
  [database, s3, source] = await Promise.all([createTestDatabase(), startS3Server(), startFixtureServer()]);
});

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await s3?.close();
  await database?.drop();
  await Promise.all(machines.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A process on a machine of its own: nothing on disk is shared with the others. */
async function machine(role: 'api' | 'worker'): Promise<{ process: ServiceProcess; dataDir: string; tmpDir: string }> {
  const dataDir = await makeDataDir();
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'vds-machine-tmp-'));
  machines.push(dataDir, tmpDir);
  const process = await spawnServiceProcess({
    ...s3.env(),
    ROLE: role,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    TMPDIR: tmpDir,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
    RETRY_DELAY_SECONDS: '1',
    LOG_LEVEL: 'info',
    // One connection, so that parts complete one after another and the kill finds some recorded
    // (over several, each connection's part completes only at its piece's end).
    DIRECT_CONNECTIONS: '1',
  });
  return { process, dataDir, tmpDir };
}

/** Whether a worker's log says it started `id`. */
function started(worker: ServiceProcess, id: string): boolean {
  return worker
    .output()
    .split('\n')
    .some((line) => line.startsWith('{') && line.includes(`"download_id":"${id}"`) && line.includes('"status":"downloading"'));
}

test('when the worker running a direct download is killed with kill -9, then a worker on another machine resumes it from the recorded parts, fetching at most 1.5x the file', async () => {
  const { 'six-parts.mp4': file } = await sizedMedia();
  const size = (await stat(file)).size;
  const [api, first, second] = await Promise.all([machine('api'), machine('worker'), machine('worker')]);
  const url = source.file('/six-parts.mp4', file, { bytesPerSecond: Math.ceil(size / 8) });

  const created = await api.process.http.createDownload({ url });
  expect(created.status).toBe(202);
  const id = (created.body as Download).id;
  const running = await waitFor('a worker to start the download', () => [first, second].find((worker) => started(worker.process, id)), 30_000);
  const other = running === first ? second : first;
  // Past three parts, so that some are recorded however the kill falls.
  await waitForProgress(api.process.http, id, 3.5 * PART_BYTES, 30_000);
  await running.process.kill('SIGKILL');

  const done = await api.process.waitForStatus(id, ['completed'], TAKEOVER_MS);
  expect(done.file?.sha256).toBe(await sha256File(file));
  expect(started(other.process, id)).toBe(true);
  const requests = source.requestsFor('/six-parts.mp4');
  // The second worker asked for the rest only, from the end of a completed part.
  const resumed = requests.at(-1)!;
  const from = Number(/^bytes=(\d+)-$/.exec(resumed.range ?? '')?.[1]);
  expect(from).toBeGreaterThanOrEqual(2 * PART_BYTES);
  expect(from % PART_BYTES).toBe(0);
  const fetched = requests.reduce((sum, request) => sum + request.bytesSent, 0);
  expect(fetched).toBeLessThanOrEqual(1.5 * size);

  // The file is in the bucket only, and served by the API, which never had it on its disk.
  expect(await s3.objectSize(id)).toBe(size);
  const res = await api.process.http.getFile(done.token!, { Range: `bytes=${size - 100}-` });
  expect(res.status).toBe(206);
  expect(res.body.length).toBe(100);
  expect(await readdir(api.dataDir)).not.toContain('files');
  // Its scratch root (TMPDIR/vds-work-<deployment>) is there, and empty once the download is done.
  const [scratch, ...more] = (await readdir(other.tmpDir)).filter((name) => name.startsWith('vds-work-'));
  expect(more).toEqual([]);
  await waitFor('the surviving worker to let go of its scratch files', async () => (await readdir(path.join(other.tmpDir, scratch!))).length === 0);
  expect(await s3.pendingUploads()).toEqual([]);
}, 180_000);

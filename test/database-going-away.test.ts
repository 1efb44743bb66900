import { rm, stat } from 'node:fs/promises';
import getPort from 'get-port';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { makeDataDir, type Download } from './support/api.ts';
import { openEventStream } from './support/event-stream.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess } from './support/service-process.ts';
import { within } from './support/waiting.ts';

// The database going away under the service, in a process of its own (`npm start`), so that an
// error nobody listens for shows as what it is: the process dying of it. A PostgreSQL of this
// file's own, which it stops together with the service, as a process manager or a container stop
// stops both.

let databaseDir: string;
let databasePort: number;
let database: EmbeddedDatabase | undefined;
const databaseLog: string[] = [];
let source: FixtureServer;
const dataDirs: string[] = [];

async function startDatabase(): Promise<EmbeddedDatabase> {
  try {
    return await startEmbeddedPostgres(databaseDir, { port: databasePort, log: (line) => databaseLog.push(line) });
  } catch (error) {
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${databaseLog.slice(-20).join('')}`);
  }
}

async function spawnService() {
  const dataDir = await makeDataDir();
  dataDirs.push(dataDir);
  return spawnServiceProcess({ DATABASE_URL: database!.url, DATA_DIR: dataDir, ALLOW_PRIVATE_ADDRESSES: 'true' }, 60_000);
}

beforeAll(async () => {
  databaseDir = await makeDataDir();
  databasePort = await getPort({ host: '127.0.0.1' });
  [database, source] = await Promise.all([startDatabase(), startFixtureServer()]);
}, 60_000);

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await database?.stop();
  await Promise.all([databaseDir, ...dataDirs].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
});

test('when the service and its database are stopped together right after it first answers, then it exits 0 every time, with no unhandled error', async () => {
  // The stop lands while start-up work is still running; the race is the database's, so three rounds.
  for (let round = 1; round <= 3; round++) {
    database ??= await startDatabase();
    const app = await spawnService();
    const running = database;
    database = undefined;
    const [code] = await Promise.all([app.signalGroup('SIGTERM'), running.stop()]);
    const output = app.output();
    // What it printed last says why, when it did not exit 0.
    expect({ round, code, last: code === 0 ? '' : output.slice(-2_000) }).toEqual({ round, code: 0, last: '' });
    expect(output).not.toMatch(/Unhandled 'error' event|uncaught/i);
  }
}, 180_000);

test("when every one of the service's connections to the database is terminated while it runs, then it keeps serving, and a client following a download still hears it to the end", async () => {
  database ??= await startDatabase();
  const app = await spawnService();
  const size = (await stat(mediaPath('big.mp4'))).size;
  const created = await app.http.createDownload({ url: source.file('/followed.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 4) }) });
  expect(created.status).toBe(202);
  const id = (created.body as Download).id;
  const stream = await openEventStream(app.url, id);
  await stream.waitForEvents(1);

  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    // The pool, pg-boss's pool and its LISTEN connection, and the process's own LISTEN connection.
    expect(rows.length).toBeGreaterThanOrEqual(3);
  } finally {
    await admin.end();
  }

  await within(30_000, 'the followed download to complete on its stream', stream.ended);
  expect(stream.events.at(-1)?.download.status).toBe('completed');
  const later = await app.http.createDownload({ url: source.file('/after.mp4', mediaPath('clip.mp4')) });
  expect(later.status).toBe(202);
  expect((await app.waitForStatus((later.body as Download).id, ['completed'])).status).toBe('completed');
  expect(app.output()).not.toMatch(/Unhandled 'error' event|uncaught/i);
  expect(await app.signalGroup('SIGTERM')).toBe(0);
}, 90_000);

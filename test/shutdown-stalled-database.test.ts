import { rm, stat } from 'node:fs/promises';
import pg from 'pg';
import { DATABASE_ANSWER_MS } from '../src/db/deadline.ts';
import { makeDataDir, type Download } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess } from './support/service-process.ts';
import { within } from './support/waiting.ts';

// A SIGTERM that meets a database which stalls (a lock held too long, a network that drops its
// packets): the service must still be gone within a bound of its own, as a process manager or a
// container stop gives it a few seconds before SIGKILL. It waited for as long as the stall
// lasted, and exited only once the database answered again.

let database: TestDatabase;
let source: FixtureServer;
let dataDir: string;

beforeAll(async () => {
  [database, source, dataDir] = await Promise.all([createTestDatabase(), startFixtureServer(), makeDataDir()]);
}, 60_000);

afterAll(async () => {
  await killServiceProcesses();
  await source?.close();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Well above the service's own bound on a database answer, well below a process manager's patience. */
const EXIT_MS = DATABASE_ANSWER_MS + 8_000;

test('when the service gets SIGTERM while its database stalls with a download running, then it exits 0 within seconds, not when the stall ends', async () => {
  const app = await spawnServiceProcess({ DATABASE_URL: database.url, DATA_DIR: dataDir, ALLOW_PRIVATE_ADDRESSES: 'true' }, 60_000);
  const size = (await stat(mediaPath('big.mp4'))).size;
  const created = await app.http.createDownload({ url: source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 20) }) });
  expect(created.status).toBe(202);
  await app.waitForStatus((created.body as Download).id, ['downloading']);

  const locker = new pg.Client({ connectionString: database.url });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE downloads IN ACCESS EXCLUSIVE MODE');
    const started = Date.now();
    // The lock is held for far longer than EXIT_MS: an exit within it cannot be the stall ending.
    const code = await within(EXIT_MS, 'the service to exit after SIGTERM while its database stalls', app.signalGroup('SIGTERM'));
    expect({ code, elapsedUnderBound: Date.now() - started < EXIT_MS }).toEqual({ code: 0, elapsedUnderBound: true });
    expect(app.output()).not.toMatch(/Unhandled 'error' event|uncaught/i);
  } finally {
    await locker.query('ROLLBACK').catch(() => {});
    await locker.end();
  }
}, 90_000);

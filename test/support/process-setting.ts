import { rm } from 'node:fs/promises';
import { makeDataDir } from './api.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { startedLater } from './harness.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './service-process.ts';

// What the tests of whole service processes (killed, restarted, several at once) share: one
// database, one data folder and a fixture server for the file, and processes started on them.

export type ProcessSetting = {
  readonly database: TestDatabase;
  readonly source: FixtureServer;
  readonly dataDir: string;
  /** A service process on the file's database and data folder, with `env` over the file's own. */
  start(env?: Record<string, string>): Promise<ServiceProcess>;
};

/** Registers the hooks that make the setting before the file's tests and end it after them. */
export function useProcessSetting(env: Record<string, string> = {}): ProcessSetting {
  const database = startedLater<TestDatabase>('the test database');
  const source = startedLater<FixtureServer>('the fixture server');
  let dataDir: string | undefined;
  beforeAll(async () => {
    database.set(await createTestDatabase());
    dataDir = await makeDataDir();
    source.set(await startFixtureServer());
  });
  afterAll(async () => {
    // Killed first: a live process would hold connections to the database and files in the dir.
    await killServiceProcesses();
    await source.get()?.close();
    await database.get()?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  return {
    database: database.value,
    source: source.value,
    get dataDir() {
      if (!dataDir) throw new Error('the data folder is used before the beforeAll that makes it has run');
      return dataDir;
    },
    start: (more = {}) =>
      spawnServiceProcess({
        DATABASE_URL: database.value.url,
        DATA_DIR: dataDir!,
        ALLOW_PRIVATE_ADDRESSES: 'true',
        RATE_LIMIT_PER_MINUTE: '0',
        RETRY_DELAY_SECONDS: '1',
        ...env,
        ...more,
      }),
  };
}

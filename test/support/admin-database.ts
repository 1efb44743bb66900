import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';

// The server on which every test file creates (and drops) its own database. TEST_DATABASE_URL
// points at an existing server; without it the run brings its own, like the service does.

export type AdminDatabase = { url: string; source: 'TEST_DATABASE_URL' | 'embedded'; stop(): Promise<void> };

async function checkReachable(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version_num: string }>('SHOW server_version_num');
    // DROP DATABASE ... WITH (FORCE) arrived in PostgreSQL 13.
    if (Number(rows[0]?.server_version_num ?? 0) < 130000) throw new Error('PostgreSQL 13 or newer is required');
  } catch (error) {
    throw new Error(`TEST_DATABASE_URL is not usable as an admin server: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

export async function startAdminDatabase(env: NodeJS.ProcessEnv = process.env): Promise<AdminDatabase> {
  const external = env.TEST_DATABASE_URL;
  if (external) {
    await checkReachable(external);
    return { url: external, source: 'TEST_DATABASE_URL', stop: async () => {} };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-test-pg-'));
  // Running as root, the cluster runs as the `postgres` user, which must be able to reach its dir.
  await chmod(dir, 0o755);
  const log: string[] = [];
  try {
    const database = await startEmbeddedPostgres(dir, { log: (line) => log.push(line) });
    return {
      url: database.url,
      source: 'embedded',
      stop: async () => {
        try {
          await database.stop();
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`embedded PostgreSQL did not start: ${(error as Error).message}\n${log.slice(-30).join('\n')}`);
  }
}

// Jest loads globalSetup and globalTeardown as separate modules; the parent process's globals are
// the only thing they share.
const key = Symbol.for('vds.test.adminDatabase');
const globals = globalThis as Record<symbol, AdminDatabase | undefined>;

export const runningAdminDatabase = {
  set(database: AdminDatabase): void {
    globals[key] = database;
  },
  take(): AdminDatabase | undefined {
    const database = globals[key];
    globals[key] = undefined;
    return database;
  },
};

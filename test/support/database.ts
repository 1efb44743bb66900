import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ADMIN_DATABASE_URL_ENV, publishedEnv } from './published-env.ts';

export type TestDatabase = { url: string; name: string; drop(): Promise<void> };

async function onAdminServer(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: publishedEnv(ADMIN_DATABASE_URL_ENV) });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A new, empty database on the admin server. Each test file gets its own, so migrations, rows and
 * pg-boss queues of parallel Jest workers never meet.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  // Random rather than per-worker, so a database left by a crashed run can never be reused.
  const name = `vds_test_${randomBytes(8).toString('hex')}`;
  await onAdminServer(`CREATE DATABASE ${name}`);
  const url = new URL(publishedEnv(ADMIN_DATABASE_URL_ENV));
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      // FORCE ends connections a stopped service may still leave behind (pool or pg-boss).
      await onAdminServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Runs `during` while `tables` of `databaseUrl` are locked against every read, and releases the lock whatever happens. */
export async function whileLocked<T>(databaseUrl: string | undefined, tables: readonly string[], during: () => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('BEGIN');
    await db.query(`LOCK TABLE ${tables.join(', ')} IN ACCESS EXCLUSIVE MODE`);
    return await during();
  } finally {
    await db.query('ROLLBACK').catch(() => {});
    await db.end();
  }
}

import pg from 'pg';
import { PgBoss } from 'pg-boss';

// The pg-boss side of a test database, as an operator or pg-boss itself would touch it: to queue a
// job twice, delete or cancel one, or read a queue's settings.

/** A pg-boss client on `databaseUrl` that runs no maintenance of its own. Pair with `stop()`. */
export async function openQueue(databaseUrl: string): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: databaseUrl, supervise: false, schedule: false });
  boss.on('error', (error: Error) => console.error('[test queue]', error.message));
  await boss.start();
  return boss;
}

export type JobRow = { id: string; state: string; retry_limit: number; expire_seconds: number };

/** The jobs of download `downloadId`, in any state. */
export async function jobsOf(databaseUrl: string, downloadId: string): Promise<JobRow[]> {
  return query<JobRow>(databaseUrl, "SELECT id, state, retry_limit, expire_seconds FROM pgboss.job WHERE name = 'download' AND data->>'download_id' = $1", [
    downloadId,
  ]);
}

export async function query<T extends pg.QueryResultRow>(databaseUrl: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

import { PgBoss } from 'pg-boss';
import type { Config } from '../config/index.ts';

// The queue lives in the same PostgreSQL as the downloads (schema "pgboss"), so that a download
// row and its job are written in one transaction.

export const DOWNLOAD_QUEUE = 'download';
export type DownloadJob = { download_id: string };

export async function startQueue(databaseUrl: string, config: Config): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    // Workers wake on NOTIFY the moment a job is created; polling stays as the fallback.
    useListenNotify: true,
    // Only the API-only role has no scheduler work to do.
    schedule: config.role !== 'api',
    // The pass that fails jobs whose worker stopped sending heartbeats (a crash, kill -9): often
    // enough that a crashed download resumes within seconds of a restart, not minutes.
    superviseIntervalSeconds: 5,
    monitorIntervalSeconds: 5,
  });
  boss.on('error', (error: Error) => console.error('[queue]', error.message));
  await boss.start();
  await boss.createQueue(DOWNLOAD_QUEUE, {
    notify: true,
    // Our own `attempts` decides when a download has failed for good (MAX_ATTEMPTS); pg-boss only
    // has to keep retrying until then, so its limit leaves room for runs cut short by a shutdown.
    retryLimit: config.maxAttempts + 3,
    retryDelay: config.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: 300,
    // A worker that dies (kill -9, lost machine) stops its heartbeats; its job is retried then,
    // instead of after the expiry, which has to allow for hours-long transfers.
    heartbeatSeconds: 10,
    expireInSeconds: 6 * 3600,
  });
  return boss;
}

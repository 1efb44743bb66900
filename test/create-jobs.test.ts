import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgBoss } from 'pg-boss';
import { DOWNLOAD_QUEUE, type DownloadJob } from '../src/queue/index.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { openQueue, query } from './support/queue.ts';

// A create writes its download's job itself, in the statement that writes the row
// (src/downloads/create-sql.ts): the job must be the one pg-boss's own insert() writes, and wake a
// waiting worker as that does. The service only serves the API, so no worker of its own takes the
// jobs.

const { app } = useService({ role: 'api' });

async function created(): Promise<string> {
  const res = await app.http.createDownload({ url: 'http://example.com/a.mp4' });
  expect(res.status).toBe(202);
  return (res.body as Download).id;
}

test('when a download is created, then its job is the one pg-boss queues for the same data', async () => {
  const id = await created();
  const boss = await openQueue(app.config.databaseUrl!);
  const other = randomUUID();
  try {
    await boss.insert(DOWNLOAD_QUEUE, [{ data: { download_id: other } satisfies DownloadJob }]);
  } finally {
    await boss.stop({ graceful: false });
  }

  // Every column but those that differ between any two jobs; the times as their distances.
  const jobs = await query<{ download: string; job: Record<string, unknown> }>(
    app.config.databaseUrl!,
    `SELECT data->>'download_id' AS download,
            to_jsonb(j) - 'id' - 'data' - 'created_on' - 'start_after' - 'keep_until'
              || jsonb_build_object('due', start_after - created_on, 'kept', keep_until - start_after, 'keys', (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(data) k)) AS job
       FROM pgboss.job j WHERE name = $1 AND data->>'download_id' = ANY($2)`,
    [DOWNLOAD_QUEUE, [id, other]],
  );
  const ours = jobs.find((job) => job.download === id);
  const theirs = jobs.find((job) => job.download === other);
  expect(ours).toBeDefined();
  expect(ours!.job).toEqual(theirs!.job);
});

test('when a download is created, then a worker that waits for NOTIFY takes its job at once', async () => {
  // Polling only every minute: within the test, nothing but the NOTIFY can bring it the job.
  const boss = new PgBoss({ connectionString: app.config.databaseUrl!, supervise: false, schedule: false, useListenNotify: true });
  await boss.start();
  try {
    const taken = new Set<string>();
    // The first fetch, as the worker starts, takes every job queued before: each fetch takes the oldest.
    const options = { batchSize: 100, pollingIntervalSeconds: 60, notifyPollingIntervalSeconds: 60 };
    await boss.work<DownloadJob>(DOWNLOAD_QUEUE, options, (jobs) => {
      for (const job of jobs) taken.add(job.data.download_id);
      return Promise.resolve();
    });
    // That first fetch is over.
    await sleep(1_000);
    const id = await created();
    const began = Date.now();
    while (!taken.has(id) && Date.now() - began < 10_000) await sleep(20);
    expect(taken).toContain(id);
  } finally {
    await boss.stop({ graceful: false });
  }
});

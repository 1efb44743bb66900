import { PgBoss } from 'pg-boss';
import { MAX_DOWNLOAD_TIMEOUT_SECONDS } from '../src/config/download-timeout.ts';
import { downloadJobExpirySeconds } from '../src/queue/expiry.ts';
import { startService, type Service } from '../src/service.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { jobsOf, query } from './support/queue.ts';

// pg-boss copies a queue's settings into each job as it is queued, and createQueue leaves a queue
// that exists as it was: the settings of a start must reach the queue row itself.

let restarted: Service;
const { app, source } = useService({ maxAttempts: 1, retryDelaySeconds: 1 }, { beforeStop: async () => await restarted?.stop() });

type QueueRow = { retry_limit: number; retry_delay: number; expire_seconds: number };

async function downloadQueue(): Promise<QueueRow> {
  const [row] = await query<QueueRow>(app.config.databaseUrl!, "SELECT retry_limit, retry_delay, expire_seconds FROM pgboss.queue WHERE name = 'download'");
  return row!;
}

test('when a queue created by an earlier start had other settings, then the next start brings it to the configuration', async () => {
  const first = await downloadQueue();
  await app.service.stop();
  restarted = await startService({
    ...app.config,
    port: Number(new URL(app.service.url).port),
    maxAttempts: 3,
    retryDelaySeconds: 5,
    downloadTimeoutSeconds: 36_000,
  });

  const now = await downloadQueue();
  // MAX_ATTEMPTS, plus room for attempts cut short by a shutdown.
  expect(now.retry_limit).toBe(6);
  expect(now.retry_limit).toBeGreaterThan(first.retry_limit);
  expect(now.retry_delay).toBe(5);
  expect(now.expire_seconds).toBeGreaterThan(36_000);
});

test('when DOWNLOAD_TIMEOUT_SECONDS is past 6 hours, then a download job expires only after the download has timed out and written its outcome', async () => {
  const created = await app.http.createDownload({ url: source.file('/clip.mp4', mediaPath('clip.mp4')) });
  const id = (created.body as Download).id;
  await app.waitForStatus(id, ['completed']);

  const [job] = await jobsOf(app.config.databaseUrl!, id);
  expect(job).toMatchObject({ retry_limit: 6 });
  // A job that pg-boss expires while its download still runs is handed to a second worker.
  expect(job!.expire_seconds).toBeGreaterThan(36_000 + 60);
});

test('when DOWNLOAD_TIMEOUT_SECONDS is the most the configuration allows, then pg-boss takes the queue, and a job one second longer it refuses', async () => {
  await (restarted ?? app.service).stop();
  restarted = await startService({ ...app.config, port: Number(new URL(app.service.url).port), downloadTimeoutSeconds: MAX_DOWNLOAD_TIMEOUT_SECONDS });
  // The whole of pg-boss's limit: the bound the configuration keeps is pg-boss's own, not a smaller one.
  expect((await downloadQueue()).expire_seconds).toBe(downloadJobExpirySeconds(MAX_DOWNLOAD_TIMEOUT_SECONDS));

  const boss = new PgBoss({ connectionString: app.config.databaseUrl!, supervise: false, schedule: false });
  await boss.start();
  try {
    await expect(boss.updateQueue('download', { expireInSeconds: downloadJobExpirySeconds(MAX_DOWNLOAD_TIMEOUT_SECONDS) + 1 })).rejects.toThrow(/expiration/);
  } finally {
    await boss.stop({ graceful: false });
  }
});

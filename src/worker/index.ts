import type { PgBoss } from 'pg-boss';
import { DOWNLOAD_QUEUE, type DownloadJob } from '../queue/index.ts';
import { startWebhookDelivery } from '../webhooks/delivery.ts';
import { startRetention, EXPIRE_QUEUE } from './retention.ts';
import { runDownload, ShutdownError, type DownloadDeps } from './run-download.ts';

export type Worker = { stop(): Promise<void> };

/** Consumes the download queue, WORKER_CONCURRENCY jobs at a time in this process. */
export async function startWorker(boss: PgBoss, deps: DownloadDeps): Promise<Worker> {
  await startRetention(boss, deps);
  const webhooks = await startWebhookDelivery(boss, deps);
  const running = new Set<AbortController>();
  await boss.work<DownloadJob>(
    DOWNLOAD_QUEUE,
    {
      localConcurrency: deps.config.workerConcurrency,
      batchSize: 1,
      // A new job wakes a worker through NOTIFY, but a retry coming due does not: polling finds it.
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 1,
    },
    async ([job]) => {
      if (!job) return;
      const controller = new AbortController();
      running.add(controller);
      try {
        await runDownload(deps, job.data.download_id, controller.signal);
      } finally {
        running.delete(controller);
      }
    },
  );
  return {
    // Running downloads are interrupted: each keeps what it has on disk, goes back to `queued`,
    // and its job fails into a retry that resumes from the partial file.
    async stop() {
      for (const controller of running) controller.abort(new ShutdownError());
      await Promise.all([boss.offWork(DOWNLOAD_QUEUE, { wait: true }), boss.offWork(EXPIRE_QUEUE, { wait: true }), webhooks.stop()]);
    },
  };
}

import type { PgBoss } from 'pg-boss';
import { workEnded } from '../core/collect-buffers.ts';
import { DOWNLOAD_QUEUE, requeueDownload, type DownloadJob } from '../queue/index.ts';
import { startWebhookDelivery } from '../webhooks/delivery.ts';
import type { ExpandDeps } from '../collections/expand.ts';
import type { CheckDeps } from '../subscriptions/check.ts';
import { startChecks } from './check-subscriptions.ts';
import { startExpansions } from './expand-collections.ts';
import { startRetention, EXPIRE_QUEUE } from './retention.ts';
import { runDownload, ShutdownError, type DownloadDeps } from './run-download.ts';
import { hashThread } from '../files/hash-thread.ts';

export type Worker = { stop(): Promise<void> };

/** Consumes the download queue, WORKER_CONCURRENCY jobs at a time in this process, and the collection and subscription queues. */
export async function startWorker(boss: PgBoss, deps: DownloadDeps & { expand: ExpandDeps; check: CheckDeps }): Promise<Worker> {
  // Their threads are part of the idle worker, not of its first download (a thread takes a few
  // hundred ms to start); idle, they keep no process alive.
  hashThread.start();
  deps.sandbox.prestart();
  await startRetention(boss, deps);
  const webhooks = await startWebhookDelivery(boss, deps);
  const expansions = await startExpansions(boss, { ...deps.expand, changes: deps.changes });
  const checks = await startChecks(boss, deps.check);
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
      } catch (error) {
        // Interrupted by this process's shutdown: a retry of this job would wait out a backoff
        // that grows with every restart, and use up pg-boss's retries; a new job does neither.
        if (!controller.signal.aborted) throw error;
        await requeueDownload(boss, job.data.download_id);
      } finally {
        running.delete(controller);
        if (running.size === 0) workEnded(() => running.size === 0);
      }
    },
  );
  return {
    // Running downloads are interrupted: each keeps what it has on disk, goes back to `queued`,
    // and a new job resumes it from the partial file on the next worker to start or still running.
    async stop() {
      for (const controller of running) controller.abort(new ShutdownError());
      await Promise.all([
        boss.offWork(DOWNLOAD_QUEUE, { wait: true }),
        boss.offWork(EXPIRE_QUEUE, { wait: true }),
        webhooks.stop(),
        expansions.stop(),
        checks.stop(),
      ]);
    },
  };
}

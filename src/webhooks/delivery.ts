import type { JobResult, JobWithMetadata, PgBoss } from 'pg-boss';
import type { Config } from '../config/index.ts';
import type { DownloadRepository } from '../downloads/repository.ts';
import type { Metrics } from '../operations/metrics.ts';
import { WEBHOOK_QUEUE, type WebhookJob } from './queue.ts';
import { WebhookSender } from './sender.ts';

export type WebhookDelivery = { stop(): Promise<void> };

/**
 * Deliveries this process runs side by side, each on its own: a receiver that hangs for its 10 s
 * holds one of them, not a whole batch (a batch is settled only when its slowest delivery is).
 */
const DELIVERIES_AT_ONCE = 8;

/**
 * Consumes the webhook queue in a worker process. Each attempt is recorded on its download (a
 * collection's webhook records none: the contract shows no delivery state for it); a
 * failure goes back to pg-boss, which retries it with backoff until the queue's retry limit, so
 * the attempt that reaches the limit is the one that records `failed`.
 */
export async function startWebhookDelivery(boss: PgBoss, deps: { downloads: DownloadRepository; config: Config; metrics: Metrics }): Promise<WebhookDelivery> {
  const sender = new WebhookSender({ secret: deps.config.webhookSecret, allowPrivateAddresses: deps.config.allowPrivateAddresses });

  async function attempt(job: JobWithMetadata<WebhookJob>): Promise<JobResult> {
    const delivery = await sender.deliver(job.data);
    deps.metrics.webhooks.inc({ result: delivery.ok ? 'delivered' : delivery.final ? 'refused' : 'failed' });
    if (delivery.ok) {
      if (job.data.download_id) await deps.downloads.recordCallback(job.data.download_id, { state: 'delivered', lastError: null });
      return { id: job.id, status: 'completed' };
    }
    const last = delivery.final || job.retryCount >= job.retryLimit;
    if (job.data.download_id) await deps.downloads.recordCallback(job.data.download_id, { state: last ? 'failed' : 'pending', lastError: delivery.error });
    // `deadletter` ends a job without its remaining retries (there is no dead-letter queue to move it to).
    return { id: job.id, status: delivery.final ? 'deadletter' : 'failed', output: { message: delivery.error } };
  }

  await boss.work(
    WEBHOOK_QUEUE,
    {
      localConcurrency: DELIVERIES_AT_ONCE,
      includeMetadata: true,
      perJobResults: true,
      // A new job wakes the worker through NOTIFY, but a retry coming due does not: polling finds it.
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 1,
    },
    // A job whose outcome could not be recorded is retried without an error escaping the worker.
    (jobs: JobWithMetadata<WebhookJob>[]) =>
      Promise.all(jobs.map((job) => attempt(job).catch((error: Error): JobResult => ({ id: job.id, status: 'failed', output: { message: error.message } })))),
  );
  return {
    // A delivery in flight ends within its 10 s; it is waited for rather than cut and retried.
    async stop() {
      await boss.offWork(WEBHOOK_QUEUE, { wait: true });
      await sender.close();
    },
  };
}

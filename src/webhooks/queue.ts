import type { PgBoss } from 'pg-boss';
import type { Config } from '../config/index.ts';
import { ensureQueue } from '../queue/index.ts';

// Each webhook is a pg-boss job, so that a delivery outlives a restart and its retries (with
// backoff) are pg-boss's, not a timer in one process's memory.

export const WEBHOOK_QUEUE = 'webhook';

/** Everything a delivery needs, fixed when the download ended: every retry sends the same event. */
export type WebhookJob = {
  /** The download whose webhook it is, where its delivery is recorded; or the collection's, or the subscription's. */
  download_id?: string;
  collection_id?: string;
  subscription_id?: string;
  url: string;
  /** The Standard Webhooks message id a receiver deduplicates on. */
  webhook_id: string;
  /** The JSON text that is signed and sent, byte for byte the same on every attempt. */
  body: string;
};

/** The longest wait between two deliveries: with the default 60 s and 12 attempts, retries span about a day. */
const RETRY_DELAY_MAX_SECONDS = 6 * 3600;

/**
 * Every role inserts webhook jobs (the API ends downloads too, by cancelling them), and an insert
 * into a queue that does not exist fails, so each process creates it before it can end a download.
 */
export async function ensureWebhookQueue(boss: PgBoss, config: Config): Promise<void> {
  await ensureQueue(boss, WEBHOOK_QUEUE, {
    notify: true,
    retryLimit: config.webhookMaxAttempts - 1,
    retryDelay: config.webhookRetryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: RETRY_DELAY_MAX_SECONDS,
    // A delivery gives up after 10 s; one still active long after that was lost with its process,
    // and is retried when this runs out.
    expireInSeconds: 60,
  });
}

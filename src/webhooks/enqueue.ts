import { randomUUID } from 'node:crypto';
import { fromPrisma, type PgBoss } from 'pg-boss';
import type { components } from '../../generated/api.ts';
import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Config } from '../config/index.ts';
import { presentCollection } from '../collections/present.ts';
import type { CollectionEndedHook } from '../collections/repository.ts';
import { presentDownload } from '../downloads/present.ts';
import type { EndedHook } from '../downloads/repository.ts';
import { presentSubscription } from '../subscriptions/present.ts';
import type { CheckedHook } from '../subscriptions/repository.ts';
import { WEBHOOK_QUEUE, type WebhookJob } from './queue.ts';

type WebhookEvent = components['schemas']['WebhookEvent'];
type CollectionWebhookEvent = components['schemas']['CollectionWebhookEvent'];
type SubscriptionWebhookEvent = components['schemas']['SubscriptionWebhookEvent'];

function webhookId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}

/** Where links in a webhook point: where the client created the download or collection, else PUBLIC_BASE_URL. */
function linkBaseOf(row: { linkBase: string | null }, config: Config): string {
  return row.linkBase ?? `${config.publicBaseUrl ?? ''}${config.basePath}`;
}

const EVENT_TYPES: Partial<Record<Row['status'], WebhookEvent['type']>> = {
  completed: 'download.completed',
  failed: 'download.failed',
  cancelled: 'download.cancelled',
};

/**
 * Queues the webhook of every ended download that asked for one, in the transaction that ends it:
 * the job exists exactly when the end does. The event is written down here, once, so that every
 * retry sends the same id and the same bytes, showing the download as it was when it ended.
 */
export function enqueueWebhooks(boss: PgBoss, config: Config): EndedHook {
  return async (rows, tx) => {
    const jobs = rows.flatMap((row) => {
      const type = EVENT_TYPES[row.status];
      if (!row.callbackUrl || !type) return [];
      const event: WebhookEvent = { type, timestamp: new Date().toISOString(), data: presentDownload(row, linkBaseOf(row, config)) };
      const data: WebhookJob = {
        download_id: row.id,
        url: row.callbackUrl,
        webhook_id: webhookId(),
        body: JSON.stringify(event),
      };
      return [{ data }];
    });
    if (jobs.length) await boss.insert(WEBHOOK_QUEUE, jobs, { db: fromPrisma(tx) });
  };
}

/**
 * Queues the one `collection.completed` webhook of each ended collection that asked for one, in
 * the transaction that ends it, as enqueueWebhooks does for downloads.
 */
export function enqueueCollectionWebhooks(boss: PgBoss): CollectionEndedHook {
  return async (ended, tx) => {
    const jobs = ended.flatMap(({ row, counts }) => {
      if (!row.callbackUrl) return [];
      const event: CollectionWebhookEvent = { type: 'collection.completed', timestamp: new Date().toISOString(), data: presentCollection(row, counts) };
      const data: WebhookJob = { collection_id: row.id, url: row.callbackUrl, webhook_id: webhookId(), body: JSON.stringify(event) };
      return [{ data }];
    });
    if (jobs.length) await boss.insert(WEBHOOK_QUEUE, jobs, { db: fromPrisma(tx) });
  };
}

/** Queues `subscription.checked` for a check that made a collection, in the check's transaction. */
export function enqueueSubscriptionWebhooks(boss: PgBoss): CheckedHook {
  return async (subscription, seenCount, collection, tx) => {
    if (!subscription.callbackUrl) return;
    const event: SubscriptionWebhookEvent = {
      type: 'subscription.checked',
      timestamp: new Date().toISOString(),
      data: { subscription: presentSubscription(subscription, seenCount), collection: presentCollection(collection.row, collection.counts) },
    };
    const data: WebhookJob = { subscription_id: subscription.id, url: subscription.callbackUrl, webhook_id: webhookId(), body: JSON.stringify(event) };
    await boss.insert(WEBHOOK_QUEUE, [{ data }], { db: fromPrisma(tx) });
  };
}

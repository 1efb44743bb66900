import { randomUUID } from 'node:crypto';
import { fromPrisma, type PgBoss } from 'pg-boss';
import type { components } from '../../generated/api.ts';
import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Config } from '../config/index.ts';
import { presentDownload } from '../downloads/present.ts';
import type { EndedHook } from '../downloads/repository.ts';
import { WEBHOOK_QUEUE, type WebhookJob } from './queue.ts';

type WebhookEvent = components['schemas']['WebhookEvent'];

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
      // Links point where the client created the download (its origin and BASE_PATH); a row from
      // before that was recorded falls back to PUBLIC_BASE_URL.
      const linkBase = row.linkBase ?? `${config.publicBaseUrl ?? ''}${config.basePath}`;
      const event: WebhookEvent = { type, timestamp: new Date().toISOString(), data: presentDownload(row, linkBase) };
      const data: WebhookJob = {
        download_id: row.id,
        url: row.callbackUrl,
        webhook_id: `msg_${randomUUID().replaceAll('-', '')}`,
        body: JSON.stringify(event),
      };
      return [{ data }];
    });
    if (jobs.length) await boss.insert(WEBHOOK_QUEUE, jobs, { db: fromPrisma(tx) });
  };
}

import type { PgBoss } from 'pg-boss';
import { DownloadError } from '../core/errors.ts';
import type { CollectionRepository } from '../collections/repository.ts';
import type { DownloadRepository } from '../downloads/repository.ts';
import type { SubscriptionRepository } from '../subscriptions/repository.ts';
import { ensureQueue } from '../queue/index.ts';
import type { Storage } from '../storage/index.ts';

// A pg-boss schedule sweeps every minute (one worker of the cluster takes each run), and every
// worker sweeps as it starts: files live FILE_TTL_SECONDS, so what is due becomes `expired` (its
// token then answers 410) and its file goes; a download whose job pg-boss no longer holds would
// wait for ever, so it fails, as does a collection whose expansion job was lost; a subscription
// whose check is overdue with no job (lost, or its checker died) is scheduled again; a collection's
// cancel cut short by a crash is finished; and work left by downloads that no longer run goes (a working folder
// on this machine, an S3 upload of any machine's, which is aborted).

export const EXPIRE_QUEUE = 'expire-downloads';

type RetentionDeps = {
  downloads: DownloadRepository;
  storage: Storage;
  expand: { collections: CollectionRepository };
  check: { subscriptions: SubscriptionRepository };
};

/** How long past due a subscription's check may be before its job counts as lost: a check that is due waits for a worker's next poll, not this long. */
const CHECK_LOST_AFTER_SECONDS = 30;

const jobLost = new DownloadError(
  'internal_error',
  'The queue lost the job of this download (it gave up retrying it, or the job was deleted), so the download would never run again; it is not tried again.',
);

const expansionLost = new DownloadError(
  'internal_error',
  'The queue lost the job that reads this collection (it gave up retrying it, or the job was deleted), so it would never be expanded; it is not tried again.',
);

async function sweep(deps: RetentionDeps): Promise<void> {
  await deps.expand.collections.failExpansionsWithoutJob(expansionLost);
  await deps.expand.collections.finishCutCancels();
  await deps.check.subscriptions.rescheduleLost(CHECK_LOST_AFTER_SECONDS);
  const expired = await deps.downloads.expireDue();
  await Promise.all(expired.map((id) => deps.storage.files.remove(id)));
  const lost = await deps.downloads.failWithoutJob(jobLost);
  await Promise.all(lost.map((id) => deps.storage.discardAll(id)));
  await removeOrphanedWork(deps);
}

/** Work left by downloads that are no longer running: deleted rows, or ended ones. */
async function removeOrphanedWork(deps: RetentionDeps): Promise<void> {
  const ids = await deps.storage.workIds();
  const active = await deps.downloads.activeAmong(ids.filter((id) => /^[0-9a-f-]{36}$/.test(id)));
  await Promise.all(ids.filter((id) => !active.has(id)).map((id) => deps.storage.discardWork(id)));
}

export async function startRetention(boss: PgBoss, deps: RetentionDeps): Promise<void> {
  await sweep(deps);
  await ensureQueue(boss, EXPIRE_QUEUE, { retryLimit: 0 });
  await boss.schedule(EXPIRE_QUEUE, '* * * * *');
  await boss.work(EXPIRE_QUEUE, async () => {
    await sweep(deps);
  });
}

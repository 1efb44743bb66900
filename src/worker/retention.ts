import type { PgBoss } from 'pg-boss';
import type { Prisma } from '../db/prisma.ts';
import { activeAmong, expireDue } from '../downloads/transitions.ts';
import type { LocalStorage } from '../storage/local.ts';

// Files live FILE_TTL_SECONDS: a pg-boss schedule sweeps every minute (one worker of the cluster
// takes each run), marks what is due `expired` (its token then answers 410) and deletes its file.

export const EXPIRE_QUEUE = 'expire-downloads';

type RetentionDeps = { prisma: Prisma; storage: LocalStorage };

async function sweepExpired(deps: RetentionDeps): Promise<number> {
  const ids = await expireDue(deps.prisma);
  await Promise.all(ids.map((id) => deps.storage.removeFile(id)));
  return ids.length;
}

/** Working directories left by downloads that are no longer running: deleted rows, or ended ones. */
async function removeOrphanedWork(deps: RetentionDeps): Promise<void> {
  const ids = await deps.storage.workIds();
  const active = await activeAmong(deps.prisma, ids.filter((id) => /^[0-9a-f-]{36}$/.test(id)));
  await Promise.all(ids.filter((id) => !active.has(id)).map((id) => deps.storage.discardWork(id)));
}

export async function startRetention(boss: PgBoss, deps: RetentionDeps): Promise<void> {
  await removeOrphanedWork(deps);
  await sweepExpired(deps);
  await boss.createQueue(EXPIRE_QUEUE, { retryLimit: 0 });
  await boss.schedule(EXPIRE_QUEUE, '* * * * *');
  await boss.work(EXPIRE_QUEUE, async () => {
    await sweepExpired(deps);
  });
}

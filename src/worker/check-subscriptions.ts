import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { checkSubscription, type CheckDeps } from '../subscriptions/check.ts';
import { SUBSCRIPTION_QUEUE, type SubscriptionJob } from '../queue/index.ts';
import { ShutdownError } from './run-download.ts';

/** Checks this process runs side by side: each is one source read, mostly waiting, of at most 30 s of its own (a yt-dlp run apart). */
const CHECKS_AT_ONCE = 4;

/**
 * Consumes the subscription queue: each job is one scheduled check, which records what it found
 * and queues the next. A check cut short by this process's shutdown lets its subscription go, to
 * be checked again at once by whichever worker runs.
 */
export async function startChecks(boss: PgBoss, deps: CheckDeps): Promise<{ stop(): Promise<void> }> {
  const running = new Set<AbortController>();
  await boss.work(
    SUBSCRIPTION_QUEUE,
    { localConcurrency: CHECKS_AT_ONCE, batchSize: 1, includeMetadata: true, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 },
    async ([job]: JobWithMetadata<SubscriptionJob>[]) => {
      if (!job) return;
      const controller = new AbortController();
      running.add(controller);
      try {
        const outcome = await checkSubscription(deps, job.data.subscription_id, { due: new Date(job.data.due) }, controller.signal);
        // Still due but held: by a check asked for meanwhile, or by one whose process died and whose
        // hold has not run out yet. A retry of this job (retryDelay later) checks then, or finds it stale.
        if (outcome.kind === 'busy') throw new Error(`subscription ${job.data.subscription_id} is held by another check`);
      } catch (error) {
        // The subscription was let go and queued again: this job is done.
        if (controller.signal.reason instanceof ShutdownError) return;
        throw error;
      } finally {
        running.delete(controller);
      }
    },
  );
  return {
    async stop() {
      for (const controller of running) controller.abort(new ShutdownError());
      await boss.offWork(SUBSCRIPTION_QUEUE, { wait: true });
    },
  };
}

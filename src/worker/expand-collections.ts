import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { expandCollection, type ExpandDeps } from '../collections/expand.ts';
import type { DownloadChanges } from '../events/changes.ts';
import { COLLECTION_QUEUE, type CollectionJob } from '../queue/index.ts';
import { ShutdownError } from './run-download.ts';

/** Collections this process expands side by side: each is one source read, mostly waiting. */
const EXPANSIONS_AT_ONCE = 2;

/**
 * Consumes the collection queue: each job reads one collection's source and makes its children.
 * An expansion stops when its collection is cancelled, and is run again by another job when this
 * process shuts down.
 */
export async function startExpansions(boss: PgBoss, deps: ExpandDeps & { changes: DownloadChanges }): Promise<{ stop(): Promise<void> }> {
  const running = new Set<AbortController>();
  await boss.work(
    COLLECTION_QUEUE,
    { localConcurrency: EXPANSIONS_AT_ONCE, batchSize: 1, includeMetadata: true, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 },
    async ([job]: JobWithMetadata<CollectionJob>[]) => {
      if (!job) return;
      const id = job.data.collection_id;
      const controller = new AbortController();
      running.add(controller);
      const unfollow = deps.changes.follow(id, (change) => {
        if (change?.id === id && change.status === 'cancelled') controller.abort(new Error(`Collection ${id} was cancelled.`));
      });
      try {
        await expandCollection(deps, id, controller.signal, job.retryCount >= job.retryLimit);
      } catch (error) {
        // Cancelled: nothing is left to do. Shut down: pg-boss runs the job again.
        if (controller.signal.aborted && !(controller.signal.reason instanceof ShutdownError)) return;
        throw error;
      } finally {
        unfollow();
        running.delete(controller);
      }
    },
  );
  return {
    async stop() {
      for (const controller of running) controller.abort(new ShutdownError());
      await boss.offWork(COLLECTION_QUEUE, { wait: true });
    },
  };
}

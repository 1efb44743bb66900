import type { PgBoss } from 'pg-boss';

/** The jobs of every pg-boss queue by state, read when Prometheus scrapes. */
export function queueCounts(boss: PgBoss): () => Promise<{ queue: string; state: string; count: number }[]> {
  return async () =>
    (await boss.getQueues())
      // pg-boss's own bookkeeping queues are no work of the service's.
      .filter((queue) => !queue.name.startsWith('__pgboss__'))
      .flatMap((queue) => [
        { queue: queue.name, state: 'ready', count: queue.readyCount },
        { queue: queue.name, state: 'deferred', count: queue.deferredCount },
        { queue: queue.name, state: 'active', count: queue.activeCount },
        { queue: queue.name, state: 'failed', count: queue.failedCount },
      ]);
}

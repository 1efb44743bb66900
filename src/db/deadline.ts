import { AsyncLocalStorage } from 'node:async_hooks';

// A database that stalls (a lock held, a network that drops packets, a server that stopped
// answering without closing its connections) leaves a query waiting for ever: pg sets no timeout
// of its own. Where an answer is owed within seconds, the wait is bounded here.

/** Longer than this, and the database does not count as answering: readiness, the queue's metrics and every request stop waiting for it. */
export const DATABASE_ANSWER_MS = 2_000;

/** The database did not answer within the time allowed; the query itself may still be waiting. */
export class DatabaseTooSlow extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/**
 * What `query` resolves to, or DatabaseTooSlow once `ms` have passed. The query is not called off
 * (pg cannot take back a query already sent); its answer, when it comes, is dropped.
 */
export async function databaseAnswer<T>(query: Promise<T>, ms = DATABASE_ANSWER_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    // Unref'd: a wait cut short this way is no reason for the process to stay up.
    timer = setTimeout(() => reject(new DatabaseTooSlow(ms)), ms).unref();
  });
  try {
    return await Promise.race([query, late]);
  } finally {
    clearTimeout(timer);
  }
}

const owed = new AsyncLocalStorage<true>();

/**
 * Runs `work` as work that owes someone an answer (a request): every query it makes, on a pool of
 * createPool, waits DATABASE_ANSWER_MS at most. Others (a download's run) wait as long as it takes.
 */
export function owingAnswer<T>(work: () => T): T {
  return owed.run(true, work);
}

/** `query`, bounded by DATABASE_ANSWER_MS if it is made for work that owes an answer. */
export function boundIfOwed<T>(query: Promise<T>): Promise<T> {
  return owed.getStore() ? databaseAnswer(query) : query;
}

import { isUniqueViolation } from '../db/errors.ts';

// One way to create something a client may send twice: a download, a collection. With an
// idempotency key, a repeat of the same request (also a concurrent one: the unique index on the
// owner and key makes the loser wait for the winner) gets what the first made, and the same key
// with another body is a conflict.

/** `over_limit`: the caller already has as many downloads (or collections) running or waiting as it may. */
export type CreateResult<R> = { kind: 'created' | 'replayed'; row: R } | { kind: 'key_conflict' } | { kind: 'over_limit'; limit: number };

export async function createIdempotently<R extends { requestHash: string }>(options: {
  /** The row made earlier with this request's idempotency key, if it has one. */
  earlier: (() => Promise<R | null>) | null;
  requestHash: string;
  /** Creates the row; null when its owner is at `limit`. */
  create: () => Promise<R | null>;
  limit: number | undefined;
}): Promise<CreateResult<R>> {
  const replay = async (): Promise<CreateResult<R> | null> => {
    const existing = options.earlier ? await options.earlier() : null;
    if (!existing) return null;
    return existing.requestHash === options.requestHash ? { kind: 'replayed', row: existing } : { kind: 'key_conflict' };
  };
  const before = await replay();
  if (before) return before;
  try {
    const row = await options.create();
    if (row) return { kind: 'created', row };
    // A repeat sent together with its first request can find the limit reached by that very
    // request: it is a repeat, and gets what the first made like any other.
    return (await replay()) ?? { kind: 'over_limit', limit: options.limit! };
  } catch (error) {
    const winner = isUniqueViolation(error) ? await replay() : null;
    if (winner) return winner;
    throw error;
  }
}

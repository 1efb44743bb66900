import type { Caller } from '../downloads/caller.ts';
import { newestFirstPage } from '../downloads/list.ts';
import { presentSubscription, type Subscription } from './present.ts';
import type { SubscriptionRepository, SubscriptionRow } from './repository.ts';

/** One subscription as the API shows it; null when the caller does not see it. */
export async function readSubscription(subscriptions: SubscriptionRepository, id: string, caller: Caller | null): Promise<Subscription | null> {
  const row = caller ? await subscriptions.findFor(id, caller) : await subscriptions.find(id);
  return row ? present(subscriptions, [row]).then(([one]) => one!) : null;
}

/** The rows with their seen counts, read together. */
export async function present(subscriptions: SubscriptionRepository, rows: SubscriptionRow[]): Promise<Subscription[]> {
  const counts = await subscriptions.seenCounts(rows.map((row) => row.id));
  return rows.map((row) => presentSubscription(row, counts.get(row.id)!));
}

/** A page of the caller's subscriptions, newest first, paged as downloads are. */
export function listSubscriptions(
  subscriptions: SubscriptionRepository,
  caller: Caller,
  query: { limit: number; cursor: string | undefined },
): Promise<{ items: Subscription[]; nextCursor: string | null }> {
  return newestFirstPage(
    query,
    (after, limit) => subscriptions.list({ caller, limit, after }),
    (rows) => present(subscriptions, rows),
  );
}

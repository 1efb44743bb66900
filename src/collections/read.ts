import type { Caller } from '../downloads/caller.ts';
import { newestFirstPage } from '../downloads/list.ts';
import { presentCollection, type Collection } from './present.ts';
import type { CollectionRepository, CollectionRow, CollectionStatus } from './repository.ts';

/** One collection as the API shows it, counts and all; null when the caller does not see it. */
export async function readCollection(collections: CollectionRepository, id: string, caller: Caller | null): Promise<Collection | null> {
  const row = caller ? await collections.findFor(id, caller) : await collections.find(id);
  return row ? present(collections, [row]).then(([one]) => one!) : null;
}

/** The rows with their counts, read together. */
export async function present(collections: CollectionRepository, rows: CollectionRow[]): Promise<Collection[]> {
  const counts = await collections.counts(rows.map((row) => row.id));
  return rows.map((row) => presentCollection(row, counts.get(row.id)!));
}

/** A page of the caller's collections, newest first, paged as downloads are. */
export function listCollections(
  collections: CollectionRepository,
  caller: Caller,
  query: { statuses: CollectionStatus[] | undefined; subscriptionId: string | undefined; limit: number; cursor: string | undefined },
): Promise<{ items: Collection[]; nextCursor: string | null }> {
  return newestFirstPage(
    query,
    (after, limit) => collections.list({ caller, statuses: query.statuses, subscriptionId: query.subscriptionId, limit, after }),
    (rows) => present(collections, rows),
  );
}

import type { Caller } from '../downloads/caller.ts';
import { decodeCursor, encodeCursor, InvalidCursorError } from '../downloads/list.ts';
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
export async function listCollections(
  collections: CollectionRepository,
  caller: Caller,
  query: { statuses: CollectionStatus[] | undefined; limit: number; cursor: string | undefined },
): Promise<{ items: Collection[]; nextCursor: string | null }> {
  const position = decodeCursor(query.cursor, undefined);
  if (position && position.kind !== 'newest') throw new InvalidCursorError();
  const rows = await collections.list({ caller, statuses: query.statuses, limit: query.limit + 1, after: position });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { items: await present(collections, page), nextCursor: rows.length > query.limit && last ? encodeCursor(last, false) : null };
}

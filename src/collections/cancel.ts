import type { Caller } from '../downloads/caller.ts';
import type { Storage } from '../storage/index.ts';
import type { CollectionRepository, CollectionRow } from './repository.ts';

/**
 * DELETE: cancels the collection and every child not yet ended; completed children keep their
 * files. A cancelled child's partial files are removed here when no attempt held it; the worker
 * running one removes them as it stops. Null for a collection the caller does not see.
 */
export async function cancelCollection(
  deps: { collections: CollectionRepository; storage: Storage },
  id: string,
  caller: Caller,
): Promise<{ row: CollectionRow; cancelled: number } | null> {
  const result = await deps.collections.cancel(id, caller);
  if (result.kind === 'unknown') return null;
  if (result.kind === 'unchanged') return { row: result.row, cancelled: 0 };
  await Promise.all(result.children.filter((child) => child.unheld).map((child) => deps.storage.discardAll(child.id)));
  return { row: result.row, cancelled: result.children.length };
}

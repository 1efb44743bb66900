import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Storage } from '../storage/index.ts';
import type { Caller } from './caller.ts';
import type { DownloadRepository } from './repository.ts';

/**
 * DELETE: cancels a download that has not ended, or expires a completed one, and removes what it
 * stored. A cancelled download's partial files are removed here only when no attempt holds it;
 * otherwise the worker running it removes them as it stops, since it may still be writing them.
 * Null for an id the caller does not see (unknown, or another key's); `changed` says whether this
 * call did it (a second DELETE changes nothing).
 */
export async function cancelDownload(
  deps: { downloads: DownloadRepository; storage: Storage },
  id: string,
  caller: Caller,
): Promise<{ row: Row; changed: boolean } | null> {
  const result = await deps.downloads.cancel(id, caller);
  switch (result.kind) {
    case 'cancelled':
      if (result.unheld) await deps.storage.discardAll(id);
      return { row: result.row, changed: true };
    case 'expired':
      await deps.storage.files.remove(id);
      return { row: result.row, changed: true };
    case 'unchanged':
      return { row: result.row, changed: false };
    case 'unknown':
      return null;
  }
}

import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Storage } from '../storage/index.ts';
import type { DownloadRepository } from './repository.ts';

// A completed download whose file the store no longer has (removed by hand, lost with a disk or a
// bucket) can never be served again: it becomes `expired` in the database, as a DELETE makes it,
// so that its GET, the list, its event stream and its link all say so from then on. It is found
// out where looking costs little: the file link, which opens the file anyway; GET of the one
// download (one look in the store, which a bucket's store answers from a HEAD up to 5 s old, for
// the clients that poll); and a list, only where the store can look at many files cheaply (a stat
// each on the local disk; a bucket would take a request per file).

type Deps = { downloads: DownloadRepository; storage: Storage };

/**
 * The download as it stands once its file was looked for; only a completed one's is. A store that
 * cannot answer (a bucket out of reach) says nothing of the file: the row stands as recorded.
 */
export async function confirmFile(deps: Deps, row: Row): Promise<Row> {
  if (row.status !== 'completed' || (await deps.storage.files.hasLately(row.id).catch(() => true))) return row;
  const [expired] = await deps.downloads.expireLost([row.id]);
  // Not changed here: another process changed it first, and its row is as that left it.
  return expired ?? (await deps.downloads.find(row.id)) ?? row;
}

/** The rows of a list as they stand, where the store can look for their files cheaply; as recorded where it cannot. */
export async function confirmFiles(deps: Deps, rows: Row[]): Promise<Row[]> {
  const completed = rows.filter((row) => row.status === 'completed').map((row) => row.id);
  const missing = completed.length ? await deps.storage.files.missingAmong(completed) : null;
  if (!missing?.length) return rows;
  const expired = new Map((await deps.downloads.expireLost(missing)).map((row) => [row.id, row]));
  return rows.map((row) => expired.get(row.id) ?? row);
}

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import sanitize from 'sanitize-filename';
import { formatBytes as bytes, ProblemError, type Collection, type Download, type VideoDownloadClient } from '../client/index.ts';
import { collectionProgressFor } from './progress.ts';

// `vds get` on several entries: follows the collection and saves each child as it completes into
// one folder named after the collection, with one progress line for all of them.

/** What the collection's saving came to: the files written, and the children that ended without one. */
export type CollectionOutcome = { folder: string; total: number; saved: string[]; savedBytes: number; missing: Missing[] };
type Missing = { child: Download; reason: string };

/**
 * A collection's name as a folder name (sanitize-filename: no separator, control, reserved name or
 * trailing dot, at most 255 bytes), or one made of its id when nothing of the name is left.
 * Characters a file system refuses become `_`; dots and spaces it would trim are dropped.
 */
export function folderName(collection: Collection): string {
  const replacement = (refused: string) => (/^[. ]+$/.test(refused) ? '' : '_');
  return sanitize((collection.name ?? '').trim(), { replacement }).trim() || `collection-${collection.id.slice(0, 8)}`;
}

/** A file name not yet used in this folder during this run: `a.mp4`, then `a (2).mp4`; never a path out of it. */
function unusedName(used: Set<string>, child: Download): string {
  const filename = sanitize(child.file!.filename) || `entry-${child.collection?.index ?? child.id}`;
  const { name, ext } = path.parse(filename);
  let candidate = filename;
  for (let n = 2; used.has(candidate.toLowerCase()); n++) candidate = `${name} (${n})${ext}`;
  used.add(candidate.toLowerCase());
  return candidate;
}

const settledWithout = (child: Download) => ['failed', 'cancelled', 'expired'].includes(child.status);

/**
 * Follows collection `id` until it is final, saving every completed child into the folder that
 * `folderOf` names (asked once the collection has its name, after expanding); saves run one at a
 * time, beside the following. A save that fails counts as a missing entry; an abort is thrown.
 */
export async function saveCollection(
  vds: VideoDownloadClient,
  id: string,
  folderOf: (collection: Collection) => string,
  { out, err, signal }: { out: NodeJS.WriteStream; err: NodeJS.WriteStream; signal: AbortSignal },
): Promise<CollectionOutcome> {
  const progress = collectionProgressFor(err);
  const taken = new Set<string>();
  const used = new Set<string>();
  const saved: string[] = [];
  const failedSaves: Missing[] = [];
  let folder: string | undefined;
  let savedBytes = 0;
  let ended = 0;
  let saving = Promise.resolve();
  const report = () => progress.settled(saved.length + failedSaves.length + ended, savedBytes);

  const saveOne = async (child: Download, into: string) => {
    const target = path.join(into, unusedName(used, child));
    try {
      const file = await vds.save(child.id, target, {
        signal,
        onBytes: ({ received_bytes }) => progress.settled(saved.length + failedSaves.length + ended, savedBytes + received_bytes),
      });
      savedBytes += file.size_bytes;
      saved.push(file.path);
      out.write(`${file.path}\n`);
    } catch (error) {
      if (signal.aborted) throw error;
      failedSaves.push({ child, reason: error instanceof Error ? error.message : String(error) });
    }
    report();
  };
  /** Queues the completed children not taken yet; counts those that ended without a file. */
  const take = (children: Download[], into: string) => {
    ended = children.filter(settledWithout).length;
    for (const child of children) {
      if (child.status !== 'completed' || !child.file || taken.has(child.id)) continue;
      taken.add(child.id);
      saving = saving.then(() => saveOne(child, into));
    }
    // Awaited at the end; until then a rejection (an abort) must not be reported as unhandled.
    saving.catch(() => {});
    report();
  };

  let finals = -1;
  let last: Collection | undefined;
  try {
    for await (const collection of vds.collections.watch(id, { signal })) {
      last = collection;
      progress.collection(collection);
      if (collection.status === 'expanding' || collection.status === 'failed') continue;
      if (folder === undefined) {
        folder = folderOf(collection);
        await mkdir(folder, { recursive: true });
      }
      const { completed, failed, cancelled, expired } = collection.counts;
      if (completed + failed + cancelled + expired === finals) continue;
      finals = completed + failed + cancelled + expired;
      take(await vds.collections.children(id, { signal }), folder);
    }
    if (last?.status === 'failed' || folder === undefined) throw collectionFailed(last);
    // The last word on every child, once the collection has ended: nothing is left to change.
    const children = await vds.collections.children(id, { signal });
    take(children, folder);
    await saving;
    const missing = [
      ...children.filter((child) => child.status !== 'completed').map((child) => ({ child, reason: reasonOf(child) })),
      ...failedSaves.map(({ child, reason }) => ({ child, reason: `not saved: ${reason}` })),
    ].sort((a, b) => (a.child.collection?.index ?? 0) - (b.child.collection?.index ?? 0));
    return { folder, total: children.length, saved, savedBytes, missing };
  } finally {
    progress.end();
  }
}

function reasonOf(child: Download): string {
  if (child.error) return `${child.status} (${child.error.code}): ${child.error.message}`;
  return child.status;
}

function collectionFailed(collection: Collection | undefined): ProblemError {
  const error = collection?.error;
  const detail = error
    ? `Collection ${collection.id} failed (${error.code}): ${error.message}`
    : `Collection ${collection?.id ?? ''} ended ${collection?.status ?? 'without a state'} before it held any entry.`;
  return new ProblemError(502, { type: 'about:blank', title: 'Collection failed', status: 502, detail });
}

/** The lines that say which entries have no file, and the summary. */
export function outcomeLines({ folder, total, saved, savedBytes, missing }: CollectionOutcome): string[] {
  return [
    ...missing.map(({ child, reason }) => `entry ${child.collection?.index ?? '?'} ${reason}: ${child.url}`),
    `saved ${saved.length} of ${total} into ${folder} (${bytes(savedBytes)}), each sha256 checked`,
  ];
}

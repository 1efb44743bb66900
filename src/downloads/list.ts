import type { Download as Row } from '../../generated/prisma/client.ts';
import type { DownloadStatus } from '../core/statuses.ts';
import type { Storage } from '../storage/index.ts';
import type { Caller } from './caller.ts';
import { confirmFiles } from './lost-files.ts';
import type { DownloadRepository, ListPosition } from './repository.ts';

// The list is paged by position, not by offset: a cursor names the last download of a page
// (its created_at and id), and the next page starts strictly after it in the same order. New
// downloads sort before every cursor, so they can neither repeat nor push out what a client pages
// through. A collection's children are listed in their collection's order instead, and a cursor
// names the index of the last. A cursor only says where to resume: what a page holds is always the caller's own
// downloads (or all, for an admin), whoever's download a cursor names.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type Page = { rows: Row[]; nextCursor: string | null };

export class InvalidCursorError extends Error {
  constructor() {
    super('The cursor is not one this service issued.');
  }
}

/** The cursor after `row`, in the order its list is in. */
export function encodeCursor(row: Pick<Row, 'createdAt' | 'id'> & Partial<Pick<Row, 'collectionIndex'>>, inCollection: boolean): string {
  const text = inCollection ? `i${row.collectionIndex ?? 0}` : `${row.createdAt.getTime()}.${row.id}`;
  return Buffer.from(text).toString('base64url');
}

/** Where a list resumes: after a cursor's row, or at the start; among a collection's children with `collectionId`. */
export function decodeCursor(cursor: string | undefined, collectionId: string | undefined): ListPosition | undefined {
  const text = cursor === undefined ? undefined : Buffer.from(cursor, 'base64url').toString('latin1');
  if (collectionId !== undefined) {
    if (text === undefined) return { kind: 'children', collectionId, index: 0 };
    if (!/^i\d{1,9}$/.test(text)) throw new InvalidCursorError();
    return { kind: 'children', collectionId, index: Number(text.slice(1)) };
  }
  if (text === undefined) return undefined;
  const [millis, id, ...rest] = text.split('.');
  const createdAt = new Date(Number(millis));
  if (rest.length || !id || !UUID.test(id) || !/^\d{1,15}$/.test(millis ?? '') || Number.isNaN(createdAt.getTime())) throw new InvalidCursorError();
  return { kind: 'newest', createdAt, id };
}

/**
 * A page of a list kept newest first (collections, subscriptions), after `cursor`: `read` is asked
 * for one more than `limit`, which says whether there is a next page.
 */
export async function newestFirstPage<R extends Pick<Row, 'createdAt' | 'id'>, T>(
  query: { limit: number; cursor: string | undefined },
  read: (after: { createdAt: Date; id: string } | undefined, count: number) => Promise<R[]>,
  present: (rows: R[]) => Promise<T[]>,
): Promise<{ items: T[]; nextCursor: string | null }> {
  const position = decodeCursor(query.cursor, undefined);
  if (position && position.kind !== 'newest') throw new InvalidCursorError();
  const rows = await read(position, query.limit + 1);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { items: await present(page), nextCursor: rows.length > query.limit && last ? encodeCursor(last, false) : null };
}

export async function listDownloads(
  deps: { downloads: DownloadRepository; storage: Storage },
  caller: Caller,
  query: { statuses: DownloadStatus[] | undefined; limit: number; cursor: string | undefined; collectionId?: string | undefined },
): Promise<Page> {
  const { statuses, limit } = query;
  const collectionId = query.collectionId?.toLowerCase();
  let after = decodeCursor(query.cursor, collectionId);
  // One more than asked says whether there is a next page. A download found expired here leaves a
  // list of other states: what it held is read on from where the reading stopped, until the page
  // is full or there is no more.
  const kept: Row[] = [];
  for (;;) {
    const wanted = limit + 1 - kept.length;
    const rows = await deps.downloads.list({ caller, statuses, limit: wanted, after });
    const now = await confirmFiles(deps, rows);
    kept.push(...(statuses ? now.filter((row) => statuses.includes(row.status)) : now));
    const last = rows.at(-1);
    if (rows.length < wanted || kept.length > limit || !last) break;
    after =
      collectionId === undefined
        ? { kind: 'newest', createdAt: last.createdAt, id: last.id }
        : { kind: 'children', collectionId, index: last.collectionIndex ?? 0 };
  }
  const page = kept.slice(0, limit);
  const last = page.at(-1);
  return { rows: page, nextCursor: kept.length > limit && last ? encodeCursor(last, collectionId !== undefined) : null };
}

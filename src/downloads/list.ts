import type { Download as Row } from '../../generated/prisma/client.ts';
import type { DownloadStatus } from '../core/statuses.ts';
import type { Storage } from '../storage/index.ts';
import type { Caller } from './caller.ts';
import { confirmFiles } from './lost-files.ts';
import type { DownloadRepository, ListPosition } from './repository.ts';

// The list is paged by position, not by offset: a cursor names the last download of a page
// (its created_at and id), and the next page starts strictly after it in the same order. New
// downloads sort before every cursor, so they can neither repeat nor push out what a client pages
// through. A cursor only says where to resume: what a page holds is always the caller's own
// downloads (or all, for an admin), whoever's download a cursor names.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type Page = { rows: Row[]; nextCursor: string | null };

export class InvalidCursorError extends Error {
  constructor() {
    super('The cursor is not one this service issued.');
  }
}

export function encodeCursor(position: ListPosition): string {
  return Buffer.from(`${position.createdAt.getTime()}.${position.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): ListPosition {
  const [millis, id, ...rest] = Buffer.from(cursor, 'base64url').toString('latin1').split('.');
  const createdAt = new Date(Number(millis));
  if (rest.length || !id || !UUID.test(id) || !/^\d{1,15}$/.test(millis ?? '') || Number.isNaN(createdAt.getTime())) throw new InvalidCursorError();
  return { createdAt, id };
}

export async function listDownloads(
  deps: { downloads: DownloadRepository; storage: Storage },
  caller: Caller,
  query: { statuses: DownloadStatus[] | undefined; limit: number; cursor: string | undefined },
): Promise<Page> {
  const { statuses } = query;
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  // One more than asked says whether there is a next page.
  const rows = await deps.downloads.list({ caller, statuses, limit: query.limit + 1, after });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  // A download found expired here leaves a list of other states; the cursor still names the last one read.
  const now = await confirmFiles(deps, page);
  return {
    rows: statuses ? now.filter((row) => statuses.includes(row.status)) : now,
    nextCursor: rows.length > query.limit && last ? encodeCursor(last) : null,
  };
}

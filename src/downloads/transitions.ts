import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Prisma } from '../db/prisma.ts';
import type { DownloadError } from '../core/errors.ts';
import { ACTIVE_STATUSES } from '../core/statuses.ts';
import { newTokenSecret } from '../core/token.ts';

// Every state change of a download, each guarded by the states it may come from, so that a late
// or repeated job can never move a download backwards (a completed one back to downloading, say).


/**
 * Starts a fetch attempt; null when the download is not waiting for one (finished, or unknown).
 * `afterCrash` says the attempt before this one never recorded an outcome: its process died.
 */
export async function startAttempt(prisma: Prisma, id: string): Promise<{ row: Row; afterCrash: boolean } | null> {
  const now = new Date();
  const rows = await prisma.$queryRaw<{ previous: string }[]>`
    UPDATE downloads d
       SET status = 'downloading', attempts = d.attempts + 1, started_at = COALESCE(d.started_at, ${now}),
           speed_bytes_per_second = NULL, updated_at = ${now}
      FROM (SELECT id, status::text AS previous FROM downloads WHERE id = ${id}::uuid FOR UPDATE) before
     WHERE d.id = before.id AND d.status IN ('queued', 'downloading', 'processing')
 RETURNING before.previous`;
  const previous = rows[0]?.previous;
  if (!previous) return null;
  const row = await prisma.download.findUnique({ where: { id } });
  return row && { row, afterCrash: previous !== 'queued' };
}

export type Progress = { downloadedBytes: number; totalBytes: number | null; speedBytesPerSecond: number | null };

export async function recordProgress(prisma: Prisma, id: string, progress: Progress): Promise<void> {
  await prisma.download.updateMany({
    where: { id, status: 'downloading' },
    data: {
      downloadedBytes: BigInt(progress.downloadedBytes),
      totalBytes: progress.totalBytes === null ? null : BigInt(progress.totalBytes),
      speedBytesPerSecond: progress.speedBytesPerSecond,
    },
  });
}

export async function rememberSourceValidator(prisma: Prisma, id: string, validator: string | null): Promise<void> {
  await prisma.download.update({ where: { id }, data: { sourceValidator: validator } });
}

export async function markProcessing(prisma: Prisma, id: string): Promise<void> {
  await prisma.download.updateMany({
    where: { id, status: 'downloading' },
    data: { status: 'processing', speedBytesPerSecond: null },
  });
}

export type StoredFile = {
  fileName: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
};

/** Completes the download and issues its retrieval token, valid for `ttlSeconds`. */
export async function markCompleted(prisma: Prisma, id: string, file: StoredFile, ttlSeconds: number): Promise<boolean> {
  const now = new Date();
  const { count } = await prisma.download.updateMany({
    where: { id, status: { in: [...ACTIVE_STATUSES] } },
    data: {
      status: 'completed',
      ...file,
      sizeBytes: BigInt(file.sizeBytes),
      downloadedBytes: BigInt(file.sizeBytes),
      totalBytes: BigInt(file.sizeBytes),
      speedBytesPerSecond: null,
      tokenSecret: newTokenSecret(),
      completedAt: now,
      expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
      errorCode: null,
      errorMessage: null,
      errorRetryable: null,
    },
  });
  return count === 1;
}

/**
 * Back to the queue, after a transient failure (whose error stays visible until the next outcome)
 * or because the worker stopped (null: the last error, if any, is kept).
 */
export async function markRetrying(prisma: Prisma, id: string, error: DownloadError | null): Promise<void> {
  const errorFields = error ? { errorCode: error.code, errorMessage: error.message, errorRetryable: true } : {};
  await prisma.download.updateMany({
    where: { id, status: { in: [...ACTIVE_STATUSES] } },
    data: { status: 'queued', speedBytesPerSecond: null, ...errorFields },
  });
}

export async function markFailed(prisma: Prisma, id: string, error: DownloadError): Promise<void> {
  await prisma.download.updateMany({
    where: { id, status: { in: [...ACTIVE_STATUSES] } },
    data: { status: 'failed', speedBytesPerSecond: null, errorCode: error.code, errorMessage: error.message, errorRetryable: error.retryable },
  });
}

/** Completed downloads whose time is up become `expired`; returns their ids, for their files to go. */
export async function expireDue(prisma: Prisma, now = new Date()): Promise<string[]> {
  const rows = await prisma.$queryRaw<{ id: string }[]>`
    UPDATE downloads SET status = 'expired', updated_at = ${now}
     WHERE status = 'completed' AND expires_at <= ${now}
 RETURNING id`;
  return rows.map((row) => row.id);
}

/** Of `ids`, those whose downloads are still running or waiting to (their working files matter). */
export async function activeAmong(prisma: Prisma, ids: string[]): Promise<Set<string>> {
  const rows = await prisma.download.findMany({ where: { id: { in: ids }, status: { in: [...ACTIVE_STATUSES] } }, select: { id: true } });
  return new Set(rows.map((row) => row.id));
}

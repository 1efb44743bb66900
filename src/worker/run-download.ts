import type { Config } from '../config/index.ts';
import type { Prisma } from '../db/prisma.ts';
import { asDownloadError, DownloadError } from '../downloads/errors.ts';
import { fileNameFor } from '../downloads/filename.ts';
import { markCompleted, markFailed, markProcessing, markRetrying, rememberSourceValidator, startAttempt } from '../downloads/transitions.ts';
import { detectContainer } from '../media/container.ts';
import { fetchDirect } from '../sources/direct/index.ts';
import type { LocalStorage } from '../storage/local.ts';
import { ProgressRecorder } from './progress.ts';

export type WorkerDeps = { prisma: Prisma; storage: LocalStorage; config: Config };

/** Thrown into a running download when the process shuts down; the job is retried later. */
export class ShutdownError extends Error {
  constructor() {
    super('The worker is shutting down.');
    this.name = 'ShutdownError';
  }
}

/**
 * One attempt at one download. It returns when the download has reached an end (completed or
 * failed for good) and throws when it must run again, so that pg-boss retries the job with backoff.
 */
export async function runDownload(deps: WorkerDeps, id: string, signal: AbortSignal): Promise<void> {
  const { prisma, storage, config } = deps;
  const row = await startAttempt(prisma, id);
  if (!row) return;
  const progress = new ProgressRecorder(prisma, id);
  try {
    const fetched = await fetchDirect({
      url: row.url,
      workDir: await storage.workDir(id),
      storage,
      signal,
      maxFileBytes: config.maxFileBytes,
      validator: row.sourceValidator,
      rememberValidator: (validator) => rememberSourceValidator(prisma, id, validator),
      progress: (downloaded, total) => progress.report(downloaded, total),
    });
    await progress.flush();
    await markProcessing(prisma, id);
    const container = await detectContainer(fetched.path, fetched.declaredType);
    if (!container) throw new DownloadError('unsupported_source', 'No video or audio was found at the URL.');
    await storage.commit(id, fetched.path);
    await markCompleted(
      prisma,
      id,
      {
        fileName: fileNameFor(row.requestedFilename, row.url, container.ext),
        contentType: container.mime,
        sizeBytes: fetched.sizeBytes,
        sha256: fetched.sha256,
        durationSeconds: null,
        width: null,
        height: null,
      },
      config.fileTtlSeconds,
    );
  } catch (thrown) {
    await progress.flush();
    if (signal.aborted) {
      await markRetrying(prisma, id, null);
      throw thrown;
    }
    const error = asDownloadError(thrown);
    if (error.retryable && row.attempts < config.maxAttempts) {
      await markRetrying(prisma, id, error);
      throw error;
    }
    await markFailed(prisma, id, error);
    await storage.discardWork(id);
  }
}

import type { Config } from '../config/index.ts';
import type { Prisma } from '../db/prisma.ts';
import { asDownloadError, DownloadError } from '../core/errors.ts';
import { parseQuality } from '../core/quality.ts';
import { fileNameFor } from '../downloads/filename.ts';
import { markCompleted, markFailed, markProcessing, markRetrying, rememberSourceValidator, startAttempt, type StoredFile } from '../downloads/transitions.ts';
import type { DocumentReader } from '../sources/documents/reader.ts';
import type { SourceHttp } from '../sources/http.ts';
import { fetchMedia } from '../sources/index.ts';
import type { LocalStorage } from '../storage/local.ts';
import { ProgressRecorder } from './progress.ts';

export type WorkerDeps = { prisma: Prisma; storage: LocalStorage; http: SourceHttp; documents: DocumentReader; ffmpeg: string; config: Config };

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
export async function runDownload(deps: WorkerDeps, id: string, shutdown: AbortSignal): Promise<void> {
  const { prisma, storage, config } = deps;
  const started = await startAttempt(prisma, id);
  if (!started) return;
  const { row } = started;
  if (started.afterCrash && row.attempts > config.maxAttempts) {
    // A download whose attempts keep ending the process (whatever in it does that) must not be
    // handed out for ever: past MAX_ATTEMPTS it fails instead of being tried again.
    await markFailed(prisma, id, new DownloadError('processing_failed', `All ${config.maxAttempts} attempts are used up and the last one ended without an outcome (its worker process stopped); the download is not tried again.`));
    await storage.discardWork(id);
    return;
  }
  const progress = new ProgressRecorder(prisma, id);
  const signal = AbortSignal.any([shutdown, AbortSignal.timeout(config.downloadTimeoutSeconds * 1000)]);
  try {
    const fetched = await fetchMedia({
      url: row.url,
      quality: parseQuality(row.quality),
      http: deps.http,
      ffmpeg: deps.ffmpeg,
      documents: deps.documents,
      maxSegments: config.maxSegments,
      workDir: await storage.workDir(id),
      storage,
      signal,
      maxFileBytes: config.maxFileBytes,
      validator: row.sourceValidator,
      rememberValidator: (validator) => rememberSourceValidator(prisma, id, validator),
      progress: (downloaded, total) => progress.report(downloaded, total),
      processing: async () => {
        await progress.flush();
        await markProcessing(prisma, id);
      },
    });
    // Everything that can fail is settled before the file is moved into place.
    const file: StoredFile = {
      fileName: fileNameFor(row.requestedFilename ?? fetched.title, row.url, fetched.ext),
      contentType: fetched.mime,
      sizeBytes: fetched.sizeBytes,
      sha256: fetched.sha256,
      durationSeconds: fetched.durationSeconds,
      width: fetched.width,
      height: fetched.height,
    };
    await storage.commit(id, fetched.path);
    let completed = false;
    try {
      completed = await markCompleted(prisma, id, file, config.fileTtlSeconds);
    } finally {
      // A file that no completed download points at (the download was ended elsewhere meanwhile,
      // or the write failed) would stay in files/ for good: nothing would ever expire it.
      if (!completed) await storage.removeFile(id);
    }
  } catch (thrown) {
    await progress.flush();
    if (shutdown.aborted) {
      await markRetrying(prisma, id, null);
      throw thrown;
    }
    const error = signal.aborted
      ? new DownloadError('source_timeout', `The download took longer than ${config.downloadTimeoutSeconds} seconds.`, false)
      : asDownloadError(thrown);
    if (error.retryable && row.attempts < config.maxAttempts) {
      await markRetrying(prisma, id, error);
      throw error;
    }
    await markFailed(prisma, id, error);
    await storage.discardWork(id);
  }
}

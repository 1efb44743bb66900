import type { Config } from '../config/index.ts';
import { asDownloadError, DownloadError } from '../core/errors.ts';
import { parseQuality } from '../core/quality.ts';
import { Attempt } from '../downloads/attempt.ts';
import { fileNameFor } from '../downloads/filename.ts';
import type { DownloadRepository, StoredFile } from '../downloads/repository.ts';
import type { DocumentReader } from '../sources/documents/reader.ts';
import type { SourceHttp } from '../sources/http.ts';
import { fetchMedia } from '../sources/index.ts';
import type { LocalStorage } from '../storage/local.ts';
import { ProgressRecorder } from './progress.ts';

export type DownloadDeps = {
  downloads: DownloadRepository;
  storage: LocalStorage;
  http: SourceHttp;
  documents: DocumentReader;
  ffmpeg: string;
  config: Config;
};

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
export async function runDownload(deps: DownloadDeps, id: string, shutdown: AbortSignal): Promise<void> {
  const attempt = await Attempt.claim(deps.downloads, id, shutdown);
  if (!attempt) return;
  try {
    await run(deps, attempt, shutdown);
  } finally {
    attempt.end();
  }
}

async function run(deps: DownloadDeps, attempt: Attempt, shutdown: AbortSignal): Promise<void> {
  const { storage, config } = deps;
  const { row } = attempt;
  if (attempt.afterCrash && row.attempts > config.maxAttempts) {
    // A download whose attempts keep ending the process (whatever in it does that) must not be
    // handed out for ever: past MAX_ATTEMPTS it fails instead of being tried again.
    const failed = await attempt.fail(
      new DownloadError(
        'processing_failed',
        `All ${config.maxAttempts} attempts are used up and the last one ended without an outcome (its worker process stopped); the download is not tried again.`,
      ),
    );
    if (failed) await storage.discardWork(row.id);
    return;
  }
  const progress = new ProgressRecorder(attempt);
  const signal = AbortSignal.any([shutdown, attempt.lost, AbortSignal.timeout(config.downloadTimeoutSeconds * 1000)]);
  try {
    const fetched = await fetchMedia({
      url: row.url,
      quality: parseQuality(row.quality),
      http: deps.http,
      ffmpeg: deps.ffmpeg,
      documents: deps.documents,
      maxSegments: config.maxSegments,
      workDir: await storage.workDir(row.id),
      storage,
      signal,
      maxFileBytes: config.maxFileBytes,
      validator: row.sourceValidator,
      rememberValidator: (validator) => attempt.rememberSourceValidator(validator),
      progress: (downloaded, total) => progress.report(downloaded, total),
      processing: async () => {
        await progress.flush();
        await attempt.markProcessing();
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
    signal.throwIfAborted();
    await storage.commit(row.id, fetched.path);
    let completed = false;
    try {
      completed = await attempt.complete(file, config.fileTtlSeconds);
    } finally {
      // A file that no completed download points at (the download was ended elsewhere meanwhile,
      // or the write failed) would stay in files/ for good: nothing would ever expire it.
      if (!completed) await storage.removeFile(row.id);
    }
  } catch (thrown) {
    await progress.flush();
    if (shutdown.aborted || attempt.lost.aborted) {
      // Interrupted, not failed: the files stay for the next attempt, which may be running already.
      await attempt.retry(null);
      throw thrown;
    }
    const error = signal.aborted
      ? new DownloadError('source_timeout', `The download took longer than ${config.downloadTimeoutSeconds} seconds.`, false)
      : asDownloadError(thrown);
    if (error.retryable && row.attempts < config.maxAttempts) {
      await attempt.retry(error);
      throw error;
    }
    if (await attempt.fail(error)) await storage.discardWork(row.id);
  }
}

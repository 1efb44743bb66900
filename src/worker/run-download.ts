import type { Config } from '../config/index.ts';
import { clipOfColumns } from '../core/clip.ts';
import { asDownloadError, DownloadError } from '../core/errors.ts';
import type { AudioFormat, Mode } from '../core/mode.ts';
import { parseQuality } from '../core/quality.ts';
import { labelOf } from '../core/text.ts';
import { Attempt } from '../downloads/attempt.ts';
import { fileNameFor } from '../downloads/filename.ts';
import type { DownloadRepository, FoundSource, StoredFile } from '../downloads/repository.ts';
import type { DownloadChanges } from '../events/changes.ts';
import type { SourceHttp } from '../net/guarded-client.ts';
import type { Logger } from '../operations/log.ts';
import type { Metrics } from '../operations/metrics.ts';
import { fetchMedia } from '../sources/index.ts';
import type { SourceFound, SourceReader } from '../sources/reader.ts';
import type { DocumentSandbox } from '../sources/sandbox/document-sandbox.ts';
import type { Storage } from '../storage/index.ts';
import { ProgressRecorder } from './progress.ts';
import { AttemptReport } from './report.ts';

export type DownloadDeps = {
  downloads: DownloadRepository;
  changes: DownloadChanges;
  storage: Storage;
  http: SourceHttp;
  sandbox: DocumentSandbox;
  /** Every way of reading a URL, in the order they are asked (sources/readers/index.ts). */
  readers: readonly SourceReader[];
  ffmpeg: string;
  config: Config;
  log: Logger;
  metrics: Metrics;
};

/** A page's or a site's title, as the Download shows it: the contract's bound. */
const MAX_TITLE_CHARS = 500;

function foundSource(source: SourceFound): FoundSource {
  return { kind: source.kind, extractor: labelOf(source.extractor), title: labelOf(source.title, MAX_TITLE_CHARS) };
}

/** Thrown into a running download when the process shuts down; the download is queued again. */
export class ShutdownError extends Error {
  constructor() {
    super('The worker is shutting down.');
    this.name = 'ShutdownError';
  }
}

/** The download was cancelled (DELETE) while this process ran it. */
class CancelledError extends Error {
  constructor(id: string) {
    super(`Download ${id} was cancelled.`);
    this.name = 'CancelledError';
  }
}

/**
 * One attempt at one download. It returns when the download has reached an end (completed,
 * failed for good, or cancelled) and throws when it must run again, so that pg-boss retries the
 * job with backoff.
 */
export async function runDownload(deps: DownloadDeps, id: string, shutdown: AbortSignal): Promise<void> {
  // A cancel is announced by the database the moment it commits; followed from before the claim,
  // so that none is missed. The lease renewal would notice it too, but only within seconds.
  const cancel = new AbortController();
  const unfollow = deps.changes.follow(id, (change) => {
    if (change?.status === 'cancelled') cancel.abort(new CancelledError(id));
    else if (!change) void wasCancelled(deps, id).then((yes) => yes && cancel.abort(new CancelledError(id)));
  });
  try {
    const attempt = await Attempt.claim(deps.downloads, id, shutdown, deps.log);
    if (!attempt) return;
    try {
      await run(deps, attempt, AbortSignal.any([shutdown, cancel.signal]), shutdown);
    } finally {
      attempt.end();
    }
  } finally {
    unfollow();
  }
}

function wasCancelled(deps: DownloadDeps, id: string): Promise<boolean> {
  return deps.downloads.find(id).then(
    (row) => row?.status === 'cancelled',
    () => false,
  );
}

/** `stop` ends the attempt early (a shutdown or a cancel); `shutdown` says which. */
async function run(deps: DownloadDeps, attempt: Attempt, stop: AbortSignal, shutdown: AbortSignal): Promise<void> {
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
    if (failed) await storage.discardAll(row.id);
    return;
  }
  const report = new AttemptReport(deps.log, deps.metrics, row);
  const progress = new ProgressRecorder(attempt, report.log);
  const signal = AbortSignal.any([stop, attempt.lost, AbortSignal.timeout(config.downloadTimeoutSeconds * 1000)]);
  // What is learnt of the source is recorded in the order it was learnt, while the fetch goes on.
  let recorded = Promise.resolve();
  // The kind an earlier attempt found stands until this one finds it again: a resumed fetch may not ask.
  let kind = row.sourceKind;
  try {
    const workDir = await storage.work.folder(row.id);
    const fetched = await fetchMedia(
      {
        url: row.url,
        quality: parseQuality(row.quality),
        mode: row.mode as Mode,
        audioFormat: row.audioFormat as AudioFormat | null,
        subtitles: row.subtitles,
        clip: clipOfColumns(row),
        http: deps.http,
        ffmpeg: deps.ffmpeg,
        sandbox: deps.sandbox,
        maxSegments: config.maxSegments,
        segmentConcurrency: config.segmentConcurrency,
        workDir,
        transfer: storage.transfers.open(row.id, workDir),
        signal,
        maxFileBytes: config.maxFileBytes,
        directConnections: config.directConnections,
        validator: row.sourceValidator,
        rememberValidator: (validator) => attempt.rememberSourceValidator(validator),
        progress: (downloaded, total) => progress.report(downloaded, total),
        processing: async () => {
          await progress.flush();
          await attempt.markProcessing(progress.fetchedBytes);
          report.processing();
        },
        phaseEnded: (phase) => report.phase(phase),
        found: (source) => {
          kind = source.kind;
          recorded = recorded.then(() => attempt.recordSource(foundSource(source))).catch((error: unknown) => report.unexpected(error));
        },
      },
      deps.readers,
    );
    await recorded;
    // Everything that can fail is settled before the file is moved into place.
    const { codecs } = fetched;
    const file: StoredFile = {
      fileName: fileNameFor(row.requestedFilename ?? fetched.title, row.url, fetched.ext),
      contentType: fetched.mime,
      sizeBytes: fetched.sizeBytes,
      sha256: fetched.sha256,
      durationSeconds: fetched.durationSeconds,
      width: fetched.width,
      height: fetched.height,
      audioCodec: codecs.audioCodec,
      videoCodec: codecs.videoCodec,
      fileSubtitles: codecs.subtitles,
    };
    signal.throwIfAborted();
    await storage.files.put(row.id, fetched.path, file.contentType, signal);
    let completed = false;
    try {
      completed = await attempt.complete(file, config.fileTtlSeconds);
      // Counted once recorded, before the clean-up: whoever sees the status may read the metrics next.
      if (completed) report.completed(fetched.source, file.sizeBytes, fetched.segments);
    } finally {
      // The work has served either way. A file that no completed download points at (the download
      // was ended elsewhere meanwhile, or the write failed) would stay in the store for good:
      // nothing would ever expire it.
      await (completed ? storage.discardWork(row.id) : storage.discardAll(row.id));
    }
  } catch (thrown) {
    // Before any outcome: the failed download must show the source it found, as its metric counts it.
    await recorded;
    await progress.flush();
    if ((stop.aborted || attempt.lost.aborted) && (await wasCancelled(deps, row.id))) {
      // Cancelled: the download has ended, and no other attempt will hold it, so its files go now.
      await storage.discardAll(row.id);
      report.cancelled();
      return;
    }
    if (shutdown.aborted || attempt.lost.aborted) {
      // Interrupted, not failed: the files stay for the next attempt, which may be running already.
      await attempt.retry(null);
      report.retrying(null);
      throw thrown;
    }
    const error = signal.aborted
      ? new DownloadError('source_timeout', `The download took longer than ${config.downloadTimeoutSeconds} seconds.`, false)
      : asDownloadError(thrown);
    if (error !== thrown && error.code === 'internal_error') report.unexpected(thrown);
    if (error.retryable && row.attempts < config.maxAttempts) {
      await attempt.retry(error);
      report.retrying(error);
      throw error;
    }
    if (await attempt.fail(error)) {
      report.failed(error, kind);
      await storage.discardAll(row.id);
    }
  }
}

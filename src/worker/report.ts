import type { DownloadError } from '../core/errors.ts';
import type { Logger } from '../operations/log.ts';
import type { Metrics } from '../operations/metrics.ts';
import type { SourceKind } from '../sources/reader.ts';
import type { SegmentStats } from '../sources/types.ts';

/**
 * The phases of an attempt, as its log lines name them: what the URL is (and the manifest's plan),
 * the bytes, ffmpeg's remux or merge (HLS, DASH, MPEG-TS), hashing and probing the result, and
 * moving it into place. A resumed download starts with its fetch.
 */
type Phase = 'resolve' | 'fetch' | 'remux' | 'probe' | 'store';

/**
 * What one attempt at a download tells the operator: a line per phase with how long it took (so a
 * slow download says where its time went), a line per state it reaches, and the metrics of how
 * it ended.
 */
export class AttemptReport {
  private readonly started = Date.now();
  private phaseStarted = this.started;
  /** The log of this attempt: every line names the download and the attempt. */
  readonly log: Logger;

  constructor(
    log: Logger,
    private readonly metrics: Metrics,
    download: { id: string; attempts: number },
  ) {
    this.log = log.child({ download_id: download.id, attempt: download.attempts });
    this.log.info({ status: 'downloading' }, 'download downloading');
  }

  /** Ends the phase that ran until now. */
  phase(name: Phase): void {
    const now = Date.now();
    this.log.info({ phase: name, duration_ms: now - this.phaseStarted }, `phase ${name} took ${now - this.phaseStarted} ms`);
    this.phaseStarted = now;
  }

  processing(): void {
    this.phase('fetch');
    this.log.info({ status: 'processing' }, 'download processing');
  }

  completed(source: SourceKind, sizeBytes: number, segments?: SegmentStats): void {
    this.phase('store');
    const seconds = (Date.now() - this.started) / 1000;
    this.metrics.finished.inc({ status: 'completed', source });
    this.metrics.bytes.inc({ source }, sizeBytes);
    this.metrics.duration.observe({ source }, seconds);
    if (segments?.hedged) this.metrics.hedges.inc(segments.hedged);
    this.log.info({ status: 'completed', source, bytes: sizeBytes, duration_ms: Date.now() - this.started, segments }, 'download completed');
  }

  /** A fault of the service's own, not the source's: its stack is for whoever runs the service. */
  unexpected(thrown: unknown): void {
    this.log.error({ err: thrown }, 'unexpected error in a download');
  }

  /** `source`: the kind found before the failure; null (counted as `unknown`) when it failed before that. */
  failed(error: DownloadError, source: string | null): void {
    this.metrics.finished.inc({ status: 'failed', source: source ?? 'unknown' });
    this.log.warn({ status: 'failed', source, error_code: error.code, error: error.message }, 'download failed');
  }

  retrying(error: DownloadError | null): void {
    this.log.info(
      { status: 'queued', error_code: error?.code, error: error?.message },
      error ? 'download will be retried' : 'download interrupted; it resumes later',
    );
  }

  cancelled(): void {
    this.log.info({ status: 'cancelled' }, 'download cancelled while running');
  }
}

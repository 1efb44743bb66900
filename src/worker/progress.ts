import type { Logger } from 'pino';
import type { Attempt } from '../downloads/attempt.ts';

const INTERVAL_MS = 500;

/**
 * Turns the stream of byte counts into at most two progress writes a second, with the speed over
 * the last interval, written one after another so that a slow write cannot reorder them.
 */
export class ProgressRecorder {
  private lastWrite = 0;
  private lastBytes = 0;
  private pending: Promise<void> = Promise.resolve();
  /** The newest count, written or not: at most two writes a second can leave the last one out. */
  fetchedBytes = 0;

  constructor(
    private readonly attempt: Attempt,
    private readonly log: Logger,
  ) {}

  report(downloadedBytes: number, totalBytes: number | null): void {
    this.fetchedBytes = downloadedBytes;
    const now = Date.now();
    if (this.lastWrite === 0) {
      this.lastWrite = now;
      this.lastBytes = downloadedBytes;
      this.write(downloadedBytes, totalBytes, null);
      return;
    }
    if (now - this.lastWrite < INTERVAL_MS) return;
    const speed = ((downloadedBytes - this.lastBytes) * 1000) / (now - this.lastWrite);
    this.lastWrite = now;
    this.lastBytes = downloadedBytes;
    this.write(downloadedBytes, totalBytes, Math.max(0, Math.round(speed)));
  }

  /** Waits for the writes in flight; a failed progress write is not worth failing a download for. */
  flush(): Promise<void> {
    return this.pending;
  }

  private write(downloadedBytes: number, totalBytes: number | null, speedBytesPerSecond: number | null): void {
    this.pending = this.pending
      .then(() => this.attempt.recordProgress({ downloadedBytes, totalBytes, speedBytesPerSecond }))
      .catch((error: unknown) => this.log.warn({ err: error }, 'progress write failed'));
  }
}

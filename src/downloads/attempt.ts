import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Download as Row } from '../../generated/prisma/client.ts';
import type { DownloadError } from '../core/errors.ts';
import { newTokenSecret } from '../core/token.ts';
import type { AttemptKey, DownloadRepository, FoundSource, Progress, StoredFile } from './repository.ts';

// Exactly one worker runs a download at a time. An attempt claims the download with a lease that
// its worker renews while the attempt runs; another claim succeeds only once the lease has run out,
// which happens when that worker died. pg-boss can hand a job out twice (after its expiry, or a
// heartbeat the database did not see in time), so the job alone cannot promise this.

/** How long a claim holds unless it is renewed. */
const LEASE_SECONDS = 30;
const RENEW_MS = 10_000;
/**
 * A worker that cannot renew its lease for this long gives the attempt up, before the lease runs
 * out: no other worker may start on a download while this one could still write to its files.
 */
const GIVE_UP_MS = LEASE_SECONDS * 1000 - RENEW_MS;
/** How often a claim that found the download leased tries again, while it waits the lease out. */
const RECLAIM_MS = 1_000;

/** The download is leased by a worker that kept renewing the lease: it is running the download. */
class ClaimedElsewhereError extends Error {
  constructor(id: string) {
    super(`Download ${id} is being run by another worker.`);
    this.name = 'ClaimedElsewhereError';
  }
}

/** The attempt could not keep its lease: another worker may hold the download now. */
class LeaseLostError extends Error {
  constructor(id: string, why: string) {
    super(`The attempt at download ${id} lost its lease: ${why}.`);
    this.name = 'LeaseLostError';
  }
}

/** One claimed attempt at a download. Every change it makes holds only while its claim does. */
export class Attempt {
  /** Aborted when the lease is lost: the attempt must stop, and leave the download's files alone. */
  readonly lost: AbortSignal;
  private readonly key: AttemptKey;
  private readonly losing = new AbortController();
  private readonly renewal: NodeJS.Timeout;
  private renewing = false;

  private constructor(
    private readonly downloads: DownloadRepository,
    readonly row: Row,
    /** The attempt before this one never recorded an outcome: its process died. */
    readonly afterCrash: boolean,
    /** When the last renewal that held (or the claim) was sent. */
    private confirmedAt: number,
    private readonly log: Logger,
  ) {
    this.key = { id: row.id, number: row.attempts };
    this.lost = this.losing.signal;
    this.renewal = setInterval(() => this.renew(), RENEW_MS);
  }

  /**
   * Claims download `id`; null when there is nothing to attempt. A lease found on it is waited out
   * for one lease period: a dead worker's runs out meanwhile, a live worker's is renewed, and then
   * this throws ClaimedElsewhereError, for the job to be retried later.
   */
  static async claim(downloads: DownloadRepository, id: string, signal: AbortSignal, log: Logger): Promise<Attempt | null> {
    const deadline = Date.now() + LEASE_SECONDS * 1000 + RECLAIM_MS;
    for (;;) {
      const sent = Date.now();
      const claim = await downloads.claim(id, LEASE_SECONDS);
      if (claim.kind === 'claimed') return new Attempt(downloads, claim.row, claim.afterCrash, sent, log);
      if (claim.kind === 'ended') return null;
      if (Date.now() >= deadline) throw new ClaimedElsewhereError(id);
      await sleep(RECLAIM_MS, undefined, { signal });
    }
  }

  recordProgress(progress: Progress): Promise<void> {
    return this.downloads.recordProgress(this.key, progress);
  }

  rememberSourceValidator(validator: string | null): Promise<void> {
    return this.downloads.rememberSourceValidator(this.key, validator);
  }

  recordSource(source: FoundSource): Promise<void> {
    return this.downloads.recordSource(this.key, source);
  }

  markProcessing(fetchedBytes: number): Promise<void> {
    return this.downloads.markProcessing(this.key, fetchedBytes);
  }

  /** Completes the download and issues its retrieval token, valid for `ttlSeconds`. */
  complete(file: StoredFile, ttlSeconds: number): Promise<boolean> {
    const now = new Date();
    return this.downloads.markCompleted(this.key, {
      ...file,
      tokenSecret: newTokenSecret(),
      completedAt: now,
      expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
    });
  }

  /** Back to the queue: after a transient failure, or interrupted (null keeps the last error). */
  retry(error: DownloadError | null): Promise<void> {
    return this.downloads.markRetrying(this.key, error);
  }

  /** False when the claim no longer held: the download's files are then another attempt's. */
  fail(error: DownloadError): Promise<boolean> {
    return this.downloads.markFailed(this.key, error);
  }

  /** Stops renewing the lease; the attempt is over. */
  end(): void {
    clearInterval(this.renewal);
  }

  private renew(): void {
    if (Date.now() - this.confirmedAt >= GIVE_UP_MS) return this.lose('it could not be renewed in time');
    if (this.renewing) return;
    this.renewing = true;
    const sent = Date.now();
    this.downloads
      .renewLease(this.key, LEASE_SECONDS)
      .then(
        (held) => {
          if (held) this.confirmedAt = sent;
          else this.lose('another attempt took the download, or it ended');
        },
        // Tried again at the next interval; the attempt gives up only when none holds in time.
        (error: unknown) => this.log.warn({ err: error, download_id: this.key.id }, 'lease renewal failed'),
      )
      .finally(() => (this.renewing = false));
  }

  private lose(why: string): void {
    this.end();
    this.losing.abort(new LeaseLostError(this.key.id, why));
  }
}

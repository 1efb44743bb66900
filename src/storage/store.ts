import type { Writable } from 'node:stream';
import { DownloadError } from '../core/errors.ts';

// The seam between the service and where finished files live. Everything above it (the worker,
// the file link, DELETE, the retention sweep) speaks of a download's file by its id; the local
// directory and an S3 bucket are the two implementations, chosen at start (storage/index.ts).

/** One stored file, open for reading. */
export interface StoredFile {
  readonly size: number;
  /** Writes bytes `start` to `end` (inclusive) into `out`, then ends it; stops early when `out` is destroyed. */
  sendTo(out: Writable, start: number, end: number): Promise<void>;
}

/**
 * The store could not be reached or did not do what was asked. A download retries it (a store that
 * was down comes back) and fails with this message past MAX_ATTEMPTS rather than completing into
 * nowhere; a request for a file answers 503.
 */
export class StoreUnavailable extends DownloadError {
  constructor(message: string) {
    super('internal_error', message, true);
    this.name = 'StoreUnavailable';
  }
}

/** The stored file went away while it was being read (removed by another process). */
export class StoredFileGone extends Error {
  constructor(id: string) {
    super(`The stored file of ${id} is gone.`);
    this.name = 'StoredFileGone';
  }
}

/** What a link to the file itself (presigned) carries: the type and attachment name the download gives it, and its life. */
export type PresignRequest = { contentType: string; contentDisposition: string; expiresAt: Date };

export interface FileStore {
  /** `local` or `s3`: for logs and /readyz. */
  readonly kind: string;
  /** Puts the finished local `file` in the store as the file of `id`; the local file is gone after. `signal` stops it. */
  put(id: string, file: string, contentType: string, signal: AbortSignal): Promise<void>;
  /** Runs `use` with the file of `id` open; null, without calling it, when there is none. */
  read<T>(id: string, use: (file: StoredFile) => Promise<T>): Promise<T | null>;
  /** Whether the file of `id` is there, for the file link: an answer up to a second old, from the link's own looks. */
  has(id: string): Promise<boolean>;
  /**
   * Whether the file of `id` is there, for a look at its download, which clients poll: an answer
   * that may be a few seconds old (S3: a HEAD per file at most every 5 s), which `has` never takes.
   */
  hasLately(id: string): Promise<boolean>;
  /**
   * Of `ids`, those without a file, when the store can tell for many at little cost; null when it
   * cannot (a request per file), and only `has` and `hasLately` then look.
   */
  missingAmong(ids: string[]): Promise<string[] | null>;
  /** Removes the file of `id`; nothing when there is none. */
  remove(id: string): Promise<void>;
  /** Whether the file link sends its reader to `presign`'s URL rather than sending the bytes itself (S3_RETRIEVAL=redirect). */
  readonly redirects: boolean;
  /**
   * A URL that serves the file of `id` without this service, until `expiresAt` or the store's own
   * bound on a link's life, whichever comes first; null when the store does not redirect.
   */
  presign(id: string, request: PresignRequest): Promise<string | null>;
  /** Null when the store can be used; otherwise why not, for /readyz. */
  problem(): Promise<string | null>;
  close(): void;
}

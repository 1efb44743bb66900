import type { Writable } from 'node:stream';

// A direct file is kept as it arrives, so that a later attempt resumes it rather than starting over:
// on the local disk (local), or in the parts of an S3 multipart upload recorded in PostgreSQL (s3),
// which a worker on another machine takes up. Either way the bytes also land in a local file,
// which ffmpeg reads once the file is whole.

/** What an earlier attempt kept of a direct file: where it came from, its length if known, and how many of its first bytes are kept. */
export type HeldTransfer = { url: string; total: number | null; bytes: number };

export interface Transfer {
  /** The local file the bytes are written into. */
  readonly file: string;
  /** What an earlier attempt kept; null for nothing. */
  held(): Promise<HeldTransfer | null>;
  /** Drops what is kept: the file starts over from `url`, `total` bytes long when known. */
  begin(url: string, total: number | null): Promise<void>;
  /** Takes the bytes from `from` on (`from` is what held() said, or 0 after begin); it finishes once they are kept. */
  writer(from: number): Writable;
  /** After the last byte: the local file made whole, with the bytes this machine never had read back from where they were kept. */
  finish(): Promise<void>;
}

export interface Transfers {
  /** The transfer of download `id`, whose local file goes in `folder`. */
  open(id: string, folder: string): Transfer;
  /** Forgets what is kept for `id` outside its working folder (an unfinished upload is aborted). */
  discard(id: string): Promise<void>;
  /** Ids that have something kept outside a working folder. */
  ids(): Promise<string[]>;
}

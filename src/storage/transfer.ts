import type { FileWriter } from '../files/file-writer.ts';
import type { Span } from '../files/spans.ts';

// A direct file is kept as it arrives, so that a later attempt resumes it rather than starting over:
// on the local disk (local), or in the parts of an S3 multipart upload recorded in PostgreSQL (s3),
// which a worker on another machine takes up. Either way the bytes also land in a local file,
// which ffmpeg reads once the file is whole. Its pieces may arrive over several connections at
// once, each written where it belongs in the file.

/** What an earlier attempt kept of a direct file: where it came from, its length if known, and which of its bytes are kept. */
export type HeldTransfer = { url: string; total: number | null; kept: Span[] };

export interface Transfer {
  /** The local file the bytes are written into. */
  readonly file: string;
  /** Pieces written at once start at a multiple of this (an upload part), so that each keeps whole parts. */
  readonly grain: number;
  /** What an earlier attempt kept; null for nothing. */
  held(): Promise<HeldTransfer | null>;
  /** Drops what is kept: the file starts over from `url`, `total` bytes long when known. */
  begin(url: string, total: number | null): Promise<void>;
  /**
   * Takes the bytes from `start` on (a kept span's end, or 0 after begin; with several writers, a
   * multiple of `grain`); it finishes once they are kept. Cut short, it keeps what it was handed.
   */
  writer(start: number): FileWriter;
  /** After the last byte: the local file made whole and `size` bytes long, with the bytes this machine never had read back from where they were kept. */
  finish(size: number): Promise<void>;
}

export interface Transfers {
  /** The transfer of download `id`, whose local file goes in `folder`. */
  open(id: string, folder: string): Transfer;
  /** Forgets what is kept for `id` outside its working folder (an unfinished upload is aborted). */
  discard(id: string): Promise<void>;
  /** Ids that have something kept outside a working folder. */
  ids(): Promise<string[]>;
}

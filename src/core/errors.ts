import type { components } from '../../generated/api.ts';
import { oneLine } from './text.ts';

export type ErrorCode = components['schemas']['ErrorCode'];

/**
 * The most of a message a failure keeps, in code points. Far more than any the service writes; a
 * message may quote a source (a playlist's attribute, a header), which could be megabytes.
 */
export const MAX_MESSAGE_CHARS = 1000;

/** A URL's `user:password@`, up to its last `@` as URL parsers read it. */
const USERINFO = /\b([a-z][a-z\d+.-]*:\/\/)[^\s/?#]*@/gi;

/**
 * A failure with a code from the contract. `retryable` failures (a 5xx, a reset connection, a
 * stall) send the download back to the queue until MAX_ATTEMPTS; the others fail it at once. Its
 * message is one line (core/text.ts): what it quotes of a source is hostile text, and a NUL in it
 * would keep the database from recording the failure. It quotes a URL without its user name and
 * password: the message is logged, and shown to whoever may read the download.
 */
export class DownloadError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly retryable = false,
  ) {
    super(oneLine(message.replace(USERINFO, '$1'), MAX_MESSAGE_CHARS));
    this.name = 'DownloadError';
  }
}

/**
 * The disk (or the quota) under DATA_DIR has no room left. Not retryable: another attempt would
 * only fill it again, and the download's partial files must go at once to give the room back.
 */
export function storageFull(): DownloadError {
  return new DownloadError('storage_full', 'The server ran out of storage space while writing the download.');
}

/** The clip asked for starts at or past the end of the media. Not retryable: the media will not grow. */
export function clipOutOfRange(startSeconds: number, durationSeconds: number | null): DownloadError {
  const lasts = durationSeconds === null ? '' : `, which lasts ${durationSeconds} s`;
  return new DownloadError('clip_out_of_range', `The clip starts at ${startSeconds} s, at or past the end of the media${lasts}.`);
}

const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);

function isNoRoom(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NO_ROOM.has(code);
}

/** Anything unexpected is an internal error, retried in case it was passing (a dropped connection). */
export function asDownloadError(error: unknown): DownloadError {
  if (error instanceof DownloadError) return error;
  if (isNoRoom(error)) return storageFull();
  return new DownloadError('internal_error', 'An unexpected error occurred while downloading.', true);
}

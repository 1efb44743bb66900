import type { components } from '../../generated/api.ts';

export type ErrorCode = components['schemas']['ErrorCode'];

/**
 * A failure with a code from the contract. `retryable` failures (a 5xx, a reset connection, a
 * stall) send the download back to the queue until MAX_ATTEMPTS; the others fail it at once.
 */
export class DownloadError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'DownloadError';
  }
}

/** Anything unexpected is an internal error, retried in case it was passing (a dropped connection). */
export function asDownloadError(error: unknown): DownloadError {
  if (error instanceof DownloadError) return error;
  console.error('[worker] unexpected error', error);
  return new DownloadError('internal_error', 'An unexpected error occurred while downloading.', true);
}

import type { CreateResult } from '../downloads/idempotent.ts';
import { HttpProblem } from './problem.ts';

/** How long a caller at its limit of active work is asked to wait: about a short download's time. */
const ACTIVE_LIMIT_RETRY_SECONDS = 10;

/**
 * Throws the answer to a create that made nothing: its Idempotency-Key was used with another body
 * (409), or the key has as much `active` work (downloads, or downloads and collections) as it may (429).
 */
export function refuseUnlessMade<R>(
  result: CreateResult<R>,
  idempotencyKey: string | undefined,
  active: string,
): asserts result is { kind: 'created' | 'replayed'; row: R } {
  if (result.kind === 'key_conflict') {
    throw new HttpProblem(409, `Idempotency-Key "${idempotencyKey}" was already used with a different request body.`);
  }
  if (result.kind === 'over_limit') {
    throw new HttpProblem(
      429,
      `This API key already has ${result.limit} ${active} queued or running (MAX_ACTIVE_DOWNLOADS_PER_KEY); retry once some have finished.`,
      { 'Retry-After': String(ACTIVE_LIMIT_RETRY_SECONDS) },
    );
  }
}

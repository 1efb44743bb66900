import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../../core/errors.ts';

/**
 * Runs `attempt` again after a short, doubling pause while it fails with a retryable error, so
 * that one flaky segment costs a moment instead of the whole download's attempt.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  signal: AbortSignal,
  options: { retries: number; firstDelayMs: number; onRetry?: () => void },
): Promise<T> {
  for (let done = 0; ; done++) {
    try {
      return await attempt();
    } catch (error) {
      const retryable = error instanceof DownloadError && error.retryable;
      if (!retryable || done >= options.retries || signal.aborted) throw error;
      options.onRetry?.();
      await sleep(options.firstDelayMs * 2 ** done, undefined, { signal }).catch(() => signal.throwIfAborted());
    }
  }
}

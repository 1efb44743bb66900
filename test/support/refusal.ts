import { DownloadError } from '../../src/core/errors.ts';

/** The DownloadError that `plan` throws; any other error is rethrown, and no error at all fails the test. */
export function refusal(plan: () => unknown): DownloadError {
  try {
    plan();
  } catch (error) {
    if (error instanceof DownloadError) return error;
    throw error;
  }
  throw new Error('planDash accepted the manifest');
}

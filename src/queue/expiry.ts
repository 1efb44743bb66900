import { POLICY } from 'pg-boss/dist/attorney.js';

// pg-boss fails a running job at its expiry even while its heartbeats go on, and another worker
// then gets it: a download's job has to outlive the download, or two workers would compete for it.

/**
 * What an attempt may need beside its download timeout: waiting out the lease of a worker that
 * died before it claims the download, and recording its outcome and removing its files after.
 */
const BESIDE_TIMEOUT_SECONDS = 300;

/** The longest DOWNLOAD_TIMEOUT_SECONDS whose job expiry pg-boss accepts. */
export const MAX_DOWNLOAD_TIMEOUT_SECONDS = POLICY.MAX_EXPIRATION_HOURS * 3600 - BESIDE_TIMEOUT_SECONDS;

export function downloadJobExpirySeconds(downloadTimeoutSeconds: number): number {
  return downloadTimeoutSeconds + BESIDE_TIMEOUT_SECONDS;
}

import { JOB_BEYOND_DOWNLOAD_SECONDS } from '../config/download-timeout.ts';

// pg-boss fails a running job at its expiry even while its heartbeats go on, and another worker
// then gets it: a download's job has to outlive the download, or two workers would compete for it.

export function downloadJobExpirySeconds(downloadTimeoutSeconds: number): number {
  return downloadTimeoutSeconds + JOB_BEYOND_DOWNLOAD_SECONDS;
}

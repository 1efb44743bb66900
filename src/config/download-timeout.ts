// How long a download may run is bounded by the job queue: pg-boss runs a job for 24 hours at
// most (its expiry may not exceed that), and a download's job must outlive the download itself.

/**
 * What an attempt may need beside its download timeout: waiting out the lease of a worker that
 * died before it claims the download, and recording its outcome and removing its files after.
 */
export const JOB_BEYOND_DOWNLOAD_SECONDS = 300;

/** pg-boss's limit on a job's expiry (checked when the queue is made or changed). */
const LONGEST_JOB_SECONDS = 24 * 3600;

/** The longest DOWNLOAD_TIMEOUT_SECONDS whose job the queue accepts. */
export const MAX_DOWNLOAD_TIMEOUT_SECONDS = LONGEST_JOB_SECONDS - JOB_BEYOND_DOWNLOAD_SECONDS;

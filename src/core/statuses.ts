import type { components } from '../../generated/api.ts';

export type DownloadStatus = components['schemas']['DownloadStatus'];

/** A download in one of these is still waiting for or running an attempt; any other status is final. */
export const ACTIVE_STATUSES = ['queued', 'downloading', 'processing'] as const satisfies readonly DownloadStatus[];

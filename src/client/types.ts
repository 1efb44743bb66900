import type { components, paths } from '../../generated/api.ts';

// Every type the SDK hands out is a name for a schema of openapi.yaml, through generated/api.ts.

type Schemas = components['schemas'];

export type Download = Schemas['Download'];
export type DownloadStatus = Schemas['DownloadStatus'];
export type DownloadPage = Schemas['DownloadPage'];
export type DownloadErrorInfo = Schemas['DownloadError'];
export type ErrorCode = Schemas['ErrorCode'];
export type Problem = Schemas['Problem'];
export type CreateDownload = NonNullable<paths['/downloads']['post']['requestBody']>['content']['application/json'];
export type ListQuery = NonNullable<paths['/downloads']['get']['parameters']['query']>;

/** The statuses after which a download changes no more (but `completed` still becomes `expired`). */
export const FINAL_STATUSES: readonly DownloadStatus[] = ['completed', 'failed', 'cancelled', 'expired'];

export const isFinal = (download: Download): boolean => FINAL_STATUSES.includes(download.status);

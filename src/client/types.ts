import type { components, paths } from '../../generated/api.ts';

// Every type the SDK hands out is a name for a schema of openapi.yaml, through generated/api.ts.

type Schemas = components['schemas'];

export type Download = Schemas['Download'];
export type DownloadStatus = Schemas['DownloadStatus'];
export type DownloadPage = Schemas['DownloadPage'];
export type DownloadErrorInfo = Schemas['DownloadError'];
export type ErrorCode = Schemas['ErrorCode'];
export type Problem = Schemas['Problem'];
export type Clip = Schemas['Clip'];
export type CreateDownload = NonNullable<paths['/downloads']['post']['requestBody']>['content']['application/json'];
export type ListQuery = NonNullable<paths['/downloads']['get']['parameters']['query']>;

export type Collection = Schemas['Collection'];
export type CollectionStatus = Schemas['CollectionStatus'];
export type CollectionCounts = Schemas['CollectionCounts'];
export type CollectionPage = Schemas['CollectionPage'];
export type CollectionPreview = Schemas['CollectionPreview'];
export type Entry = Schemas['Entry'];
export type CreateCollection = Schemas['CreateCollection'];
export type PreviewCollection = Schemas['PreviewCollection'];
export type CollectionListQuery = NonNullable<paths['/collections']['get']['parameters']['query']>;

export type Subscription = Schemas['Subscription'];
export type SubscriptionStatus = Schemas['SubscriptionStatus'];
export type SubscriptionPage = Schemas['SubscriptionPage'];
export type CreateSubscription = Schemas['CreateSubscription'];
export type UpdateSubscription = Schemas['UpdateSubscription'];
export type NothingNew = Schemas['NothingNew'];
export type SubscriptionListQuery = NonNullable<paths['/subscriptions']['get']['parameters']['query']>;

/** The statuses after which a download changes no more (but `completed` still becomes `expired`). */
export const FINAL_STATUSES: readonly DownloadStatus[] = ['completed', 'failed', 'cancelled', 'expired'];

export const isFinal = (download: Download): boolean => FINAL_STATUSES.includes(download.status);

/** The statuses after which a collection changes no more (its children may still expire). */
export const FINAL_COLLECTION_STATUSES: readonly CollectionStatus[] = ['completed', 'failed', 'cancelled'];

export const isCollectionFinal = (collection: Collection): boolean => FINAL_COLLECTION_STATUSES.includes(collection.status);

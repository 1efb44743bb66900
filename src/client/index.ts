// The SDK of the video download service: `import { createClient } from 'video-download-service/client'`.
export { clipOfFields, describeClip, formatTime, parseClip, parseTime } from './clip.ts';
export { createClient, type ClientOptions, type CollectionClient, type SaveOptions, type VideoDownloadClient, type WaitOptions } from './client.ts';
export { describeSource, formatBytes, formatDuration, problemSentence } from './describe.ts';
export { formatInterval, formatRelative, MAX_INTERVAL_SECONDS, parseDuration } from './duration.ts';
export { isNetworkError, ProblemError } from './problem.ts';
export type { SavedFile, SaveProgress } from './save.ts';
export type { SubscriptionCheck, SubscriptionClient } from './subscriptions.ts';
export { FINAL_COLLECTION_STATUSES, FINAL_STATUSES, isCollectionFinal, isFinal } from './types.ts';
export type {
  Clip,
  Collection,
  CollectionCounts,
  CollectionListQuery,
  CollectionPage,
  CollectionPreview,
  CollectionStatus,
  CreateCollection,
  CreateDownload,
  CreateSubscription,
  Download,
  DownloadErrorInfo,
  DownloadPage,
  DownloadStatus,
  Entry,
  ErrorCode,
  ListQuery,
  NothingNew,
  PreviewCollection,
  Problem,
  Subscription,
  SubscriptionListQuery,
  SubscriptionPage,
  SubscriptionStatus,
  UpdateSubscription,
} from './types.ts';
export type { WatchOptions } from './watch.ts';

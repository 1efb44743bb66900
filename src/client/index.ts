// The SDK of the video download service: `import { createClient } from 'video-download-service/client'`.
export { createClient, type ClientOptions, type CollectionClient, type SaveOptions, type VideoDownloadClient, type WaitOptions } from './client.ts';
export { describeSource, formatBytes, formatDuration, problemSentence } from './describe.ts';
export { isNetworkError, ProblemError } from './problem.ts';
export type { SavedFile, SaveProgress } from './save.ts';
export { FINAL_COLLECTION_STATUSES, FINAL_STATUSES, isCollectionFinal, isFinal } from './types.ts';
export type {
  Collection,
  CollectionCounts,
  CollectionListQuery,
  CollectionPage,
  CollectionPreview,
  CollectionStatus,
  CreateCollection,
  CreateDownload,
  Download,
  DownloadErrorInfo,
  DownloadPage,
  DownloadStatus,
  Entry,
  ErrorCode,
  ListQuery,
  PreviewCollection,
  Problem,
} from './types.ts';
export type { WatchOptions } from './watch.ts';

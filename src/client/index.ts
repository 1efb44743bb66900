// The SDK of the video download service: `import { createClient } from 'video-download-service/client'`.
export { createClient, type ClientOptions, type SaveOptions, type VideoDownloadClient, type WaitOptions } from './client.ts';
export { describeSource, formatBytes, formatDuration, problemSentence } from './describe.ts';
export { isNetworkError, ProblemError } from './problem.ts';
export type { SavedFile, SaveProgress } from './save.ts';
export { FINAL_STATUSES, isFinal } from './types.ts';
export type { CreateDownload, Download, DownloadErrorInfo, DownloadPage, DownloadStatus, ErrorCode, ListQuery, Problem } from './types.ts';
export type { WatchOptions } from './watch.ts';

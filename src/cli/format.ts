import { formatBytes as bytes, describeSource, type Download } from '../client/index.ts';

// A download as `vds list` and `vds status` print it.

/** One line of `vds list`. */
export function listLine(download: Download): string {
  const size = download.file ? bytes(download.file.size_bytes) : download.progress.percent !== null ? `${download.progress.percent}%` : '';
  return [download.id, download.status.padEnd(11), download.created_at, size.padStart(8), download.url].join('  ');
}

/** `vds status`: the download as lines of `name: value`. */
export function statusLines(download: Download): string[] {
  const { progress, file, error } = download;
  return [
    `id: ${download.id}`,
    `status: ${download.status}`,
    `url: ${download.url}`,
    `created: ${download.created_at}`,
    ...(download.source ? [`source: ${describeSource(download.source)}`] : []),
    ...(download.source?.title ? [`title: ${download.source.title}`] : []),
    ...(download.status === 'downloading'
      ? [`progress: ${bytes(progress.downloaded_bytes)}${progress.total_bytes ? ` of ${bytes(progress.total_bytes)}` : ''}`]
      : []),
    ...(file ? [`file: ${file.filename} (${bytes(file.size_bytes)}, ${file.content_type})`, `sha256: ${file.sha256}`] : []),
    ...(download.download_url ? [`link: ${download.download_url}`, `expires: ${download.expires_at}`] : []),
    ...(error ? [`error: ${error.code}: ${error.message}`] : []),
  ];
}

import { createClient, isFinal, type Download } from '../src/client/index.ts';

// The service's public API as the benchmark uses it, through the project's SDK. A download is
// followed over its event stream, as the CLI and the web page follow one: polling it 50 times a
// second would load the service with requests while its download is measured.

export type { Download };
export type CompletedDownload = Download & { completed_at: string; download_url: string };

export function createDownload(serviceUrl: string, url: string): Promise<Download> {
  return createClient({ baseUrl: serviceUrl }).create({ url });
}

/** Follows the download until it has ended, whichever way. */
export async function waitForEnd(serviceUrl: string, id: string, timeoutMs: number): Promise<Download> {
  let last: Download | undefined;
  try {
    for await (const download of createClient({ baseUrl: serviceUrl }).watch(id, { signal: AbortSignal.timeout(timeoutMs) })) last = download;
  } catch (error) {
    if ((error as Error).name !== 'TimeoutError') throw error;
  }
  if (!last || !isFinal(last)) throw new Error(`download ${id} is still ${last?.status ?? 'unseen'} after ${timeoutMs / 1000} s`);
  return last;
}

/** Creates a download of `url` and waits for it to complete; fails with its error otherwise. */
export async function downloadThroughService(serviceUrl: string, url: string, timeoutMs = 300_000): Promise<CompletedDownload> {
  const created = await createDownload(serviceUrl, url);
  const done = await waitForEnd(serviceUrl, created.id, timeoutMs);
  if (done.status !== 'completed' || !done.completed_at || !done.download_url) {
    throw new Error(`the download of ${url} ended ${done.status}: ${done.error?.code} ${done.error?.message}`);
  }
  return { ...done, completed_at: done.completed_at, download_url: done.download_url };
}

/** From the 202 (the row's creation) to the file being ready, by the service's own clock. */
export function createdToCompletedMs(download: CompletedDownload): number {
  return Date.parse(download.completed_at) - Date.parse(download.created_at);
}

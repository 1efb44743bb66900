import { setTimeout as sleep } from 'node:timers/promises';
import type { components } from '../generated/api.ts';

// The service's public API as the benchmark uses it: create a download, wait for its end.

export type Download = components['schemas']['Download'];
export type CompletedDownload = Download & { completed_at: string; download_url: string };

const ENDED = new Set<Download['status']>(['completed', 'failed', 'expired']);
const POLL_MS = 20;

export async function createDownload(serviceUrl: string, url: string): Promise<Download> {
  const response = await fetch(`${serviceUrl}/downloads`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  if (response.status !== 202) throw new Error(`POST /downloads answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Download;
}

async function getDownload(serviceUrl: string, id: string): Promise<Download> {
  const response = await fetch(`${serviceUrl}/downloads/${id}`);
  if (response.status !== 200) throw new Error(`GET /downloads/${id} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Download;
}

/** Polls until the download has ended, whichever way. */
export async function waitForEnd(serviceUrl: string, id: string, timeoutMs: number): Promise<Download> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const download = await getDownload(serviceUrl, id);
    if (ENDED.has(download.status)) return download;
    if (Date.now() > deadline) throw new Error(`download ${id} is still ${download.status} after ${timeoutMs / 1000} s`);
    await sleep(POLL_MS);
  }
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

import { setTimeout as sleep } from 'node:timers/promises';
import type { Download, TestHttp } from './api.ts';

/** Polls `check` until it returns something other than undefined or false; returns that. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Waits until the API reports at least `bytes` downloaded, so that a transfer is well under way. */
export function waitForProgress(http: TestHttp, id: string, bytes: number, timeoutMs = 20_000): Promise<Download> {
  return waitFor(
    `download ${id} to report ${bytes} bytes`,
    async () => {
      const seen = (await http.getDownload(id)).body as Download;
      if (seen.status === 'failed') throw new Error(`download ${id} failed before it got far:\n${JSON.stringify(seen, null, 2)}`);
      return seen.progress.downloaded_bytes >= bytes && seen;
    },
    timeoutMs,
  );
}

/** `promise`, or an error naming `what` once `ms` have passed: a hang becomes a failure that says what hung. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

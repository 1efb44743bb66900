import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../src/config/index.ts';
import { startService, type Service } from '../src/service.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { jobsOf, openQueue } from './support/queue.ts';

// The sweep runs when a worker starts (and on a schedule at every full minute, too rare to wait
// for), so each step restarts the service on the same database, data dir and port.

let current: Service | undefined;
const { app, source } = useService({}, { beforeStop: async () => await current?.stop() });

async function restart(overrides: Partial<Config>): Promise<void> {
  await (current ?? app.service).stop();
  current = await startService({ ...app.config, port: Number(new URL(app.service.url).port), ...overrides });
}

async function completedDownload(routePath: string): Promise<Download> {
  const created = await app.http.createDownload({ url: source.file(routePath, mediaPath('clip.mp4')) });
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed']);
}

test('when a file outlives FILE_TTL_SECONDS, then its token answers 410 and the next sweep expires it and deletes its file, leaving downloads not yet due alone', async () => {
  // Completed under the default TTL of a day, so that no sweep here may touch it.
  const notDue = await completedDownload('/not-due.mp4');

  await restart({ fileTtlSeconds: 1 });
  const due = await completedDownload('/due.mp4');
  expect(Date.parse(due.expires_at!) - Date.parse(due.completed_at!)).toBe(1_000);
  await sleep(Math.max(0, Date.parse(due.expires_at!) - Date.now()) + 100);
  // Past its time the token is refused at once, whether or not a sweep has run yet.
  const lateFetch = await app.http.getFile(due.token!);
  expect(lateFetch.status).toBe(410);

  await restart({ fileTtlSeconds: 1 });
  const swept = (await app.http.getDownload(due.id)).body as Download;
  expect(swept).toMatchObject({ status: 'expired', token: null, download_url: null, expires_at: due.expires_at });
  expect(existsSync(path.join(app.config.dataDir, 'files', due.id))).toBe(false);
  const afterSweep = await app.http.getFile(due.token!);
  expect(afterSweep.status).toBe(410);
  expect(afterSweep.headers['content-type']).toMatch(/^application\/problem\+json/);

  const untouched = (await app.http.getDownload(notDue.id)).body as Download;
  expect(untouched).toMatchObject({ status: 'completed', token: notDue.token, download_url: notDue.download_url });
  const file = await app.http.getFile(notDue.token!);
  expect(file.status).toBe(200);
  expect(file.body.equals(await readFile(mediaPath('clip.mp4')))).toBe(true);
});

test('when the queue no longer holds the job of a download that waits to run, then the sweep fails it with internal_error and leaves downloads whose jobs live alone', async () => {
  // No worker: the jobs stay queued while the test takes some of them away.
  await restart({ role: 'api' });
  const create = async (routePath: string) => {
    const created = await app.http.createDownload({ url: source.file(routePath, mediaPath('clip.mp4')) });
    return (created.body as Download).id;
  };
  const deleted = await create('/deleted-job.mp4');
  const cancelled = await create('/cancelled-job.mp4');
  const kept = await create('/kept-job.mp4');
  const boss = await openQueue(app.config.databaseUrl!);
  try {
    const [deletedJob] = await jobsOf(app.config.databaseUrl!, deleted);
    const [cancelledJob] = await jobsOf(app.config.databaseUrl!, cancelled);
    await boss.deleteJob('download', deletedJob!.id);
    await boss.cancel('download', cancelledJob!.id);
  } finally {
    await boss.stop({ graceful: false });
  }

  await restart({});
  for (const id of [deleted, cancelled]) {
    const lost = (await app.http.getDownload(id)).body as Download;
    expect(lost).toMatchObject({ status: 'failed', error: { code: 'internal_error', retryable: false } });
    expect(lost.error?.message).toMatch(/queue lost the job/);
  }
  await app.waitForStatus(kept, ['completed']);
  expect(source.requestsFor('/deleted-job.mp4')).toHaveLength(0);
  expect(source.requestsFor('/cancelled-job.mp4')).toHaveLength(0);
});

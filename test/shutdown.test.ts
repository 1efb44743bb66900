import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { startService } from '../src/service.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';

const { app, source } = useService();

test('when the service stops mid-download, then the download goes back to queued and a restart resumes it', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  // Slow enough that the stop lands in the middle of the transfer.
  const url = source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 4) });
  const created = await app.http.createDownload({ url });
  const id = (created.body as Download).id;
  let seen: Download;
  do {
    await new Promise((resolve) => setTimeout(resolve, 100));
    seen = (await app.http.getDownload(id)).body as Download;
  } while (seen.progress.downloaded_bytes < size / 4);

  await app.service.stop();

  const db = new pg.Client({ connectionString: app.config.databaseUrl });
  await db.connect();
  const { rows } = await db.query<{ status: string }>('SELECT status FROM downloads WHERE id = $1', [id]);
  await db.end();
  expect(rows[0]?.status).toBe('queued');
  const partial = path.join(app.config.dataDir, 'partial', id);
  expect(await readdir(partial)).toContain('direct.part');
  const keptBytes = (await stat(path.join(partial, 'direct.part'))).size;
  expect(keptBytes).toBeGreaterThan(0);

  // Same database, data and port, so the test's client keeps talking to "the" service.
  const restarted = await startService({ ...app.config, port: Number(new URL(app.service.url).port) });
  try {
    const done = await app.waitForStatus(id, ['completed'], 60_000);
    expect(done.file?.sha256).toBe(await sha256File(mediaPath('big.mp4')));
  } finally {
    await restarted.stop();
  }
  const requests = source.requestsFor('/slow.mp4');
  expect(requests.length).toBe(2);
  expect(requests[1]!.range).toBe(`bytes=${keptBytes}-`);
}, 90_000);

test('when the service is restarted again and again mid-download, then no restart counts as an attempt or delays the resume', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const url = source.file('/restarted.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 8) });
  // A service of its own, on the test's database and files, that can be stopped and started again.
  const port = Number(new URL(app.service.url).port);
  await app.service.stop();
  let running = await startService({ ...app.config, port });
  const id = ((await app.http.createDownload({ url })).body as Download).id;
  const restarts = 4;
  try {
    for (let restart = 1; restart <= restarts; restart++) {
      const resumedFrom = ((await app.http.getDownload(id)).body as Download).progress.downloaded_bytes;
      // Each run must pick the download up at once (no backoff) and get a little further.
      const picked = Date.now();
      let seen: Download;
      do {
        await new Promise((resolve) => setTimeout(resolve, 100));
        seen = (await app.http.getDownload(id)).body as Download;
      } while (!(seen.status === 'downloading' && seen.progress.downloaded_bytes > resumedFrom));
      expect(Date.now() - picked).toBeLessThan(5_000);
      expect(seen.attempts).toBe(1);
      await running.stop();
      running = await startService({ ...app.config, port });
    }
    const done = await app.waitForStatus(id, ['completed'], 60_000);
    expect(done.attempts).toBe(1);
    expect(done.file?.sha256).toBe(await sha256File(mediaPath('big.mp4')));
    expect(source.requestsFor('/restarted.mp4')).toHaveLength(restarts + 1);
  } finally {
    await running.stop();
  }
}, 120_000);

import { stat } from 'node:fs/promises';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { createPool } from '../src/db/pool.ts';
import { createPrisma, type Prisma } from '../src/db/prisma.ts';
import { DownloadRepository } from '../src/downloads/repository.ts';
import { DOWNLOAD_QUEUE } from '../src/queue/index.ts';
import { startService, type Service } from '../src/service.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { jobsOf, openQueue } from './support/queue.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

// Two workers share one database and one data directory, as `start:worker` processes would.
// pg-boss may hand one download's job out twice (after an expiry, or a heartbeat it did not see in
// time); only the claim on the download row keeps a second worker from running it beside the first.

let second: Service;
let boss: PgBoss;
let pool: pg.Pool;
let prisma: Prisma;
const { app, source } = useService(
  {},
  {
    beforeStop: async () => {
      await prisma?.$disconnect();
      await pool?.end();
      await boss?.stop({ graceful: false });
      await second?.stop();
    },
  },
);

beforeAll(async () => {
  second = await startService({ ...app.config, port: 0 });
  boss = await openQueue(app.config.databaseUrl!);
  pool = createPool(app.config.databaseUrl!);
  prisma = createPrisma(pool);
});

test('when a second job for a running download reaches a worker, then it starts no second attempt and the download completes once, the source asked once', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const url = source.file('/big.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 4) });
  const created = await app.http.createDownload({ url });
  const id = (created.body as Download).id;
  await waitForProgress(app.http, id, size / 8);

  // A claim made beside the running attempt finds the download leased.
  expect(await new DownloadRepository(prisma, pool).claim(id, 30)).toEqual({ kind: 'held' });
  const secondJob = await boss.send(DOWNLOAD_QUEUE, { download_id: id });
  // Taken by a worker while the first attempt still runs: fetched after the download ended, it would prove nothing.
  await waitFor(
    'a worker to fetch the second job',
    async () => (await jobsOf(app.config.databaseUrl!, id)).some((job) => job.id === secondJob && job.state === 'active'),
    10_000,
  );
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('downloading');

  const done = await app.waitForStatus(id, ['completed', 'failed']);
  expect(done).toMatchObject({ status: 'completed', attempts: 1, error: null });
  expect(done.file?.sha256).toBe(await sha256File(mediaPath('big.mp4')));
  // The second job ends once the download has: it neither ran it nor was dropped while it ran.
  const jobs = await waitFor('both jobs to end', async () => {
    const all = await jobsOf(app.config.databaseUrl!, id);
    return all.length === 2 && all.every((job) => job.state === 'completed') && all;
  });
  expect(jobs).toHaveLength(2);
  expect(source.requestsFor('/big.mp4')).toHaveLength(1);
  expect(((await app.http.getDownload(id)).body as Download).attempts).toBe(1);
}, 60_000);

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { DownloadError } from '../src/core/errors.ts';
import { applyMigrations } from '../src/db/migrate.ts';
import { createPool } from '../src/db/pool.ts';
import { createPrisma, type Prisma } from '../src/db/prisma.ts';
import { DownloadRepository, type AttemptKey } from '../src/downloads/repository.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';

let database: TestDatabase;
let pool: pg.Pool;
let prisma: Prisma;
let downloads: DownloadRepository;

beforeAll(async () => {
  database = await createTestDatabase();
  await applyMigrations(database.url);
  pool = createPool(database.url);
  prisma = createPrisma(pool);
  downloads = new DownloadRepository(prisma, pool);
});

afterAll(async () => {
  await prisma?.$disconnect();
  await pool?.end();
  await database?.drop();
});

async function queuedDownload(): Promise<string> {
  // Without its job: no worker runs here, and the claims are the repository's own.
  const row = await prisma.download.create({ data: { id: randomUUID(), url: 'http://example.com/a.mp4', quality: 'best', requestHash: 'hash' } });
  return row.id;
}

async function claimed(id: string, leaseSeconds = 30): Promise<AttemptKey> {
  const claim = await downloads.claim(id, leaseSeconds);
  if (claim.kind !== 'claimed') throw new Error(`download ${id} was not claimed: ${claim.kind}`);
  return { id, number: claim.row.attempts };
}

test('when a queued download is claimed, then the claim returns the row as a read then finds it', async () => {
  const id = await queuedDownload();
  const claim = await downloads.claim(id, 30);
  expect(claim).toMatchObject({ kind: 'claimed', afterCrash: false, row: { id, status: 'downloading', attempts: 1 } });
  expect(claim.kind === 'claimed' && claim.row).toEqual(await downloads.find(id));
});

test('when the worker holding a download stops renewing its lease, then a claim takes the download over once the lease has run out, and the first attempt can change nothing more', async () => {
  const id = await queuedDownload();
  const first = await claimed(id, 1);
  expect(await downloads.claim(id, 30)).toEqual({ kind: 'held' });

  await sleep(1_100);
  const takeover = await downloads.claim(id, 30);
  expect(takeover).toMatchObject({ kind: 'claimed', afterCrash: true, row: { attempts: 2 } });
  const before = await downloads.find(id);

  expect(await downloads.renewLease(first, 30)).toBe(false);
  await downloads.recordProgress(first, { downloadedBytes: 5, totalBytes: 10, speedBytesPerSecond: 1 });
  await downloads.rememberSourceValidator(first, '"stale"');
  await downloads.markProcessing(first, 10);
  await downloads.markRetrying(first, null);
  expect(await downloads.markFailed(first, new DownloadError('internal_error', 'stale'))).toBe(false);
  expect(await downloads.find(id)).toEqual(before);
});

test('when an attempt has recorded its outcome, then it can no longer change the source validator', async () => {
  const id = await queuedDownload();
  const attempt = await claimed(id);
  await downloads.rememberSourceValidator(attempt, '"v1"');
  expect(await downloads.markFailed(attempt, new DownloadError('source_http_error', 'gone'))).toBe(true);

  await downloads.rememberSourceValidator(attempt, '"v2"');
  expect(await downloads.find(id)).toMatchObject({ status: 'failed', sourceValidator: '"v1"' });
});

test('when a download has ended, then a claim finds nothing to attempt', async () => {
  const id = await queuedDownload();
  await downloads.markFailed(await claimed(id), new DownloadError('source_http_error', 'gone'));
  expect(await downloads.claim(id, 30)).toEqual({ kind: 'ended' });
  expect(await downloads.claim(randomUUID(), 30)).toEqual({ kind: 'ended' });
});

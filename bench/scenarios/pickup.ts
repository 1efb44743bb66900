import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createDownload, waitForEnd, type Download } from '../api.ts';
import type { Bench } from '../context.ts';
import type { Server } from '../processes.ts';
import { milliseconds, oursBelow, percentile, row, type Row } from '../table.ts';

// Scenario 5: how soon a worker starts on a new download: started_at - created_at of each of
// DOWNLOADS downloads, created at a steady rate well below what WORKER_CONCURRENCY can take (each
// points at a missing file, so its attempt ends at the first answer and never holds a worker).
// The reference is the floor of the mechanism: a bare LISTEN/NOTIFY worker on the same database.

const DOWNLOADS = 200;
const INTERVAL_MS = 50;
const P50_LIMIT_MS = 25;
const P99_LIMIT_MS = 100;
const NOTIFY_GRACE_MS = 500;

export async function benchPickup(bench: Bench, service: Server, origin: Server, databaseUrl: string): Promise<Row[]> {
  const created = await paced(() => createDownload(service.url, `${origin.url}/missing.mp4`));
  // Read once all are created, so that no polling loads the service while it picks up.
  const ours: number[] = [];
  for (const download of created) ours.push(pickupMs(await waitForEnd(service.url, download.id, 60_000)));
  const floor = await notifyFloor(databaseUrl);
  const p50 = percentile(ours, 50);
  const p99 = percentile(ours, 99);
  const slow = ours.filter((ms) => ms >= P99_LIMIT_MS).length;
  bench.progress(
    `pickup over ${DOWNLOADS}: p50 ${milliseconds(p50)}, p99 ${milliseconds(p99)}, max ${milliseconds(Math.max(...ours))}, ${slow} at ${P99_LIMIT_MS} ms or more; LISTEN/NOTIFY floor p50 ${milliseconds(percentile(floor, 50))}`,
  );
  const label = 'bare LISTEN/NOTIFY';
  const figure = `Pickup, 202 to downloading, ${DOWNLOADS} downloads at ${1000 / INTERVAL_MS}/s`;
  return [
    row(`${figure}: p50`, p50, { label, value: percentile(floor, 50) }, 'lower', milliseconds, oursBelow(P50_LIMIT_MS, `ours < ${P50_LIMIT_MS} ms`)),
    row(`${figure}: p99`, p99, { label, value: percentile(floor, 99) }, 'lower', milliseconds, oursBelow(P99_LIMIT_MS, `ours < ${P99_LIMIT_MS} ms`)),
  ];
}

/** Starts `one` every INTERVAL_MS, DOWNLOADS times, whatever the earlier ones are doing. */
async function paced<T>(one: () => Promise<T>): Promise<T[]> {
  const pending: Promise<T>[] = [];
  const start = performance.now();
  for (let i = 0; i < DOWNLOADS; i++) {
    await sleep(Math.max(0, start + i * INTERVAL_MS - performance.now()));
    pending.push(one());
  }
  return Promise.all(pending);
}

function pickupMs(download: Download): number {
  if (!download.started_at) throw new Error(`download ${download.id} ended ${download.status} without ever starting`);
  return Date.parse(download.started_at) - Date.parse(download.created_at);
}

/** The same measurement for rows that a LISTEN-ing connection stamps as soon as it is notified. */
async function notifyFloor(databaseUrl: string): Promise<number[]> {
  const worker = new pg.Client({ connectionString: databaseUrl });
  const producer = new pg.Pool({ connectionString: databaseUrl });
  await worker.connect();
  try {
    await producer.query(
      'CREATE TABLE bench_pickup (id serial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), started_at timestamptz)',
    );
    // One connection takes one job at a time, like a worker would.
    let stamping = Promise.resolve();
    worker.on('notification', (message) => {
      stamping = stamping.then(async () => {
        await worker.query('UPDATE bench_pickup SET started_at = clock_timestamp() WHERE id = $1', [Number(message.payload)]);
      });
    });
    await worker.query('LISTEN bench_pickup');
    await paced(() =>
      producer.query("WITH created AS (INSERT INTO bench_pickup DEFAULT VALUES RETURNING id) SELECT pg_notify('bench_pickup', id::text) FROM created"),
    );
    // Each notification leaves at its commit, which the producer waited for; the grace lets the last arrive.
    await sleep(NOTIFY_GRACE_MS);
    await stamping;
    const { rows } = await producer.query<{ ms: number | null }>('SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM bench_pickup');
    if (rows.some((r) => r.ms === null)) throw new Error('the LISTEN/NOTIFY reference missed notifications');
    return rows.map((r) => Number(r.ms));
  } finally {
    await worker.end();
    await producer.end();
  }
}

import { PgBoss, type Db, type Queue } from 'pg-boss';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import { listen } from '../db/listen.ts';
import { downloadJobExpirySeconds } from './expiry.ts';
import { spareIntlData } from './luxon-defaults.ts';

// The queue lives in the same PostgreSQL as the downloads, so that a download row and its job are
// written in one transaction (src/downloads/create-sql.ts writes the job as pg-boss would).

export const DOWNLOAD_QUEUE = 'download';
export type DownloadJob = { download_id: string };

/** Expands a collection (reads its playlist, feed or page) into its children. */
export const COLLECTION_QUEUE = 'collection';
export type CollectionJob = { collection_id: string };
/** Runs of a collection's job before a failure that may pass fails it for good. */
export const COLLECTION_ATTEMPTS = 3;

/** A subscription's check, due at `due` (its next_check_at when queued: a job whose due time is no longer that is stale). */
export const SUBSCRIPTION_QUEUE = 'subscription';
export type SubscriptionJob = { subscription_id: string; due: string };

export const QUEUE_SCHEMA = 'pgboss';
/** Where pg-boss keeps the jobs of every queue that is not partitioned, as ours are not. */
export const JOB_TABLE = `${QUEUE_SCHEMA}.job`;
/** The states of a job that pg-boss will still run: waiting, waiting to be retried, running. */
export const LIVE_JOB_STATES = ['created', 'retry', 'active'];

type QueueSettings = Omit<Queue, 'name' | 'policy' | 'partition' | 'deadLetter'>;

/**
 * Creates the queue, or brings the one an earlier start created to `settings`: createQueue does
 * nothing to a queue that exists. Jobs take the queue's settings when they are queued.
 */
export async function ensureQueue(boss: PgBoss, name: string, settings: QueueSettings): Promise<void> {
  await boss.createQueue(name, settings);
  await boss.updateQueue(name, settings);
}

function downloadQueueSettings(config: Config): QueueSettings {
  return {
    notify: true,
    // Our own `attempts` decides when a download has failed for good (MAX_ATTEMPTS); pg-boss only
    // has to keep retrying until then, so its limit leaves room for runs cut short by a shutdown.
    retryLimit: config.maxAttempts + 3,
    retryDelay: config.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: 300,
    // A worker that dies (kill -9, lost machine) stops its heartbeats; its job is retried then,
    // instead of at the expiry, which has to allow for the longest download.
    heartbeatSeconds: 10,
    expireInSeconds: downloadJobExpirySeconds(config.downloadTimeoutSeconds),
  };
}

/**
 * pg-boss on `pool` and a LISTEN connection of ours. Its own connections leave an error unheard
 * when the database goes away during a stop (its LISTEN connection is ended with its listeners
 * taken off), and that error would end the process.
 */
function queueDatabase(databaseUrl: string, pool: pg.Pool): Db {
  return {
    executeSql: (text, values) => pool.query(text, values),
    listen: (channel, onNotification, onReconnect) => listen(databaseUrl, channel, { applicationName: 'pgboss-listen', onNotification, onReconnect }),
  };
}

/** pg-boss on `pool`, which stays its caller's to end once the queue has stopped. */
export async function startQueue(databaseUrl: string, pool: pg.Pool, config: Config, log: Logger): Promise<PgBoss> {
  spareIntlData();
  const boss = new PgBoss({
    db: queueDatabase(databaseUrl, pool),
    schema: QUEUE_SCHEMA,
    // Workers wake on NOTIFY the moment a job is created; polling stays as the fallback.
    useListenNotify: true,
    // Only the API-only role has no scheduler work to do.
    schedule: config.role !== 'api',
    // The pass that fails jobs whose worker stopped sending heartbeats (a crash, kill -9): often
    // enough that a crashed download resumes soon after a restart, not minutes later.
    superviseIntervalSeconds: 5,
    monitorIntervalSeconds: 5,
  });
  boss.on('error', (error: Error) => log.error({ err: error }, 'queue error'));
  await boss.start();
  await ensureQueue(boss, DOWNLOAD_QUEUE, downloadQueueSettings(config));
  await ensureQueue(boss, COLLECTION_QUEUE, {
    notify: true,
    retryLimit: COLLECTION_ATTEMPTS - 1,
    retryDelay: 5,
    retryBackoff: true,
    // A worker that dies mid-expansion stops its heartbeats: its job is run again soon after.
    heartbeatSeconds: 10,
    // Reading a source is bounded by the fetch's timeouts and yt-dlp's; this only catches the lost.
    expireInSeconds: 15 * 60,
  });
  await ensureQueue(boss, SUBSCRIPTION_QUEUE, {
    notify: true,
    // A check records its own failures and schedules the next; a job fails only when its process
    // dies, or when it finds the subscription still held (by a dead process's check until that
    // hold runs out, CHECK_LEASE_SECONDS): enough retries, retryDelay apart, to outlast that hold.
    retryLimit: 4,
    retryDelay: 5,
    heartbeatSeconds: 10,
    expireInSeconds: 15 * 60,
  });
  return boss;
}

/** A new job for a download whose run was interrupted: due at once, with no retry used up. */
export async function requeueDownload(boss: PgBoss, id: string): Promise<void> {
  await boss.send(DOWNLOAD_QUEUE, { download_id: id } satisfies DownloadJob);
}

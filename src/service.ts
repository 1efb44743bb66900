import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, type Config } from './config/index.ts';
import { keyHashSecret } from './config/key-hash-secret.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.ts';
import { applyMigrationsApart } from './db/migrate-apart.ts';
import { createPool } from './db/pool.ts';
import { createPrisma } from './db/prisma.ts';
import type { Lister } from './collections/expand.ts';
import { CollectionRepository } from './collections/repository.ts';
import { DownloadRepository } from './downloads/repository.ts';
import { DownloadChanges } from './events/changes.ts';
import { EventStreams } from './events/event-streams.ts';
import { resolveFfmpegPath } from './media/ffmpeg.ts';
import { SourceHttp } from './net/guarded-client.ts';
import { queueCounts } from './operations/jobs.ts';
import { createLogger, type Logger } from './operations/log.ts';
import { Metrics } from './operations/metrics.ts';
import { startQueue } from './queue/index.ts';
import { LISTING_READ_TIMEOUT_MS, listEntries } from './sources/listing/index.ts';
import { sourceReaders } from './sources/readers/index.ts';
import { DocumentSandbox } from './sources/sandbox/document-sandbox.ts';
import { ExtractionProxy } from './sources/site/proxy.ts';
import { findYtDlp, killAllExtractions, removeLeftoverHomes, type YtDlp } from './sources/site/ytdlp.ts';
import { openStorage } from './storage/index.ts';
import { SubscriptionRepository } from './subscriptions/repository.ts';
import { enqueueCollectionWebhooks, enqueueSubscriptionWebhooks, enqueueWebhooks } from './webhooks/enqueue.ts';
import { ensureWebhookQueue } from './webhooks/queue.ts';
import { startWorker, type Worker } from './worker/index.ts';

export type Service = {
  /** http://host:port followed by BASE_PATH; empty for a worker-only process. */
  url: string;
  log: Logger;
  stop(): Promise<void>;
};

const DRAIN_MS = 10_000;

let loadingHttp: Promise<typeof import('./http/server.ts')> | undefined;

/**
 * The HTTP layer, imported only by a process that serves HTTP: a worker has no use for Express,
 * the validator or the page. One import for all the services a process starts (tests start
 * several at once), since concurrent imports of one module trip Jest's module linker.
 */
function httpLayer(): Promise<typeof import('./http/server.ts')> {
  loadingHttp ??= import('./http/server.ts');
  return loadingHttp;
}

/** Starts what `config.role` asks for (API, worker or both) on one database. */
export async function startService(config: Config): Promise<Service> {
  // Before the database: a worker without ffmpeg is refused at once, not after migrations.
  const ffmpeg = config.role === 'api' ? undefined : await resolveFfmpegPath(config.ffmpegPath);
  // What runs of a killed process left behind goes before any run of this one.
  await removeLeftoverHomes();
  // yt-dlp, when there is one: a worker extracts sites with it, the API says its version.
  const ytdlp = await findYtDlp(config);
  if (!ytdlp && config.ytdlp === 'on' && config.ytdlpPath) {
    throw new ConfigError(`YTDLP_PATH=${config.ytdlpPath} does not run yt-dlp --version; point it at a yt-dlp, unset it (yt-dlp on PATH), or set YTDLP=off.`);
  }

  const log = createLogger(config);
  await mkdir(config.dataDir, { recursive: true });
  const embedded = config.databaseUrl ? undefined : await startEmbeddedPostgres(config.dataDir, { warn: (message) => log.warn(message) });
  try {
    return await startOn(config.databaseUrl ?? embedded!.url, embedded, { config, ffmpeg, ytdlp, log });
  } catch (error) {
    // The embedded PostgreSQL runs in a process group of its own: a start that fails after it (a
    // port already taken) must stop it, or it outlives the process that exits.
    await embedded?.stop().catch(() => {});
    throw error;
  }
}

async function startOn(
  databaseUrl: string,
  embedded: EmbeddedDatabase | undefined,
  { config, ffmpeg, ytdlp, log }: { config: Config; ffmpeg: string | undefined; ytdlp: YtDlp | null; log: ReturnType<typeof createLogger> },
): Promise<Service> {
  await applyMigrationsApart(databaseUrl);
  const pool = createPool(databaseUrl);
  const prisma = createPrisma(pool);
  const queuePool = createPool(databaseUrl, 'pgboss');
  const boss = await startQueue(databaseUrl, queuePool, config, log);
  await ensureWebhookQueue(boss, config);
  const storage = await openStorage(config, prisma);
  const changes = await DownloadChanges.start(databaseUrl);
  const collections = new CollectionRepository(prisma, {
    concurrency: config.collectionConcurrency,
    childrenEnded: enqueueWebhooks(boss, config),
    collectionEnded: enqueueCollectionWebhooks(boss),
  });
  const downloads = new DownloadRepository(prisma, pool, collections.downloadsEnded);
  const subscriptions = new SubscriptionRepository(prisma, { collections, checked: enqueueSubscriptionWebhooks(boss) });
  const metrics = new Metrics(queueCounts(boss));
  // Before the worker takes a job and the API a request: see warmUp.
  await downloads.warmUp();

  const http = new SourceHttp({
    allowPrivateAddresses: config.allowPrivateAddresses,
    connectTimeoutMs: config.sourceConnectTimeoutSeconds * 1000,
    idleTimeoutMs: config.sourceIdleTimeoutSeconds * 1000,
    minBytesPerSecond: config.sourceMinBytesPerSecond,
  });
  const sandbox = new DocumentSandbox();
  // Sites are read through a proxy of this process's own, when there is a yt-dlp: by a worker's
  // downloads and expansions, and by the API's previews.
  const proxy = ytdlp ? await ExtractionProxy.start(http.addresses) : undefined;
  const site = proxy && ytdlp ? { ytdlp, proxy, timeoutMs: config.ytdlpTimeoutSeconds * 1000 } : null;
  const list: Lister = (url, options) => listEntries({ http, site, sandbox, readTimeoutMs: LISTING_READ_TIMEOUT_MS }, url, options);
  const expand = { collections, list, allowPrivateAddresses: config.allowPrivateAddresses };
  const check = {
    subscriptions,
    list,
    allowPrivateAddresses: config.allowPrivateAddresses,
    scanEntries: config.subscriptionScanEntries,
  };
  const worker: Worker | undefined =
    ffmpeg === undefined
      ? undefined
      : await startWorker(boss, { downloads, changes, storage, http, sandbox, readers: sourceReaders(site), ffmpeg, config, log, metrics, expand, check });
  const streams = new EventStreams(changes, config.maxEventStreams);
  let server: Server | undefined;
  if (config.role !== 'worker') {
    const { listen } = await httpLayer();
    server = await listen({
      downloads,
      collections,
      check,
      list,
      storage,
      streams,
      config,
      log,
      metrics,
      keyHashSecret: await keyHashSecret(config),
      ytdlpVersion: ytdlp?.version ?? null,
    });
  }
  const address = server?.address() as AddressInfo | undefined;
  const host = address?.family === 'IPv6' ? `[${address.address}]` : address?.address;

  let stopped: Promise<void> | undefined;
  const stop = async () => {
    // Stop taking requests, end the event streams (a client reconnects to another process), let
    // running downloads checkpoint and requeue, then close the rest.
    const closed = server ? closeServer(server) : Promise.resolve();
    streams.closeAll();
    const onDatabase = databaseSteps(log);
    await onDatabase(() => worker?.stop());
    await onDatabase(() => boss.stop({ graceful: true, timeout: DRAIN_MS }));
    await onDatabase(() => queuePool.end());
    await closed;
    await onDatabase(() => changes.stop());
    await killAllExtractions();
    await proxy?.close();
    await http.close();
    await sandbox.close();
    storage.close();
    await onDatabase(() => prisma.$disconnect());
    await onDatabase(() => pool.end());
    await embedded?.stop();
  };
  return {
    url: address ? `http://${host}:${address.port}${config.basePath}` : '',
    log,
    stop: () => (stopped ??= stop()),
  };
}

/** Closes the listener; transfers still running after DRAIN_MS are cut. */
function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
  return closed.finally(() => clearTimeout(cut));
}

/**
 * How long a stop waits on the database in all: one that stalls would otherwise hold the process
 * for as long as it does, past a process manager's patience. What was running is taken up by the
 * next start, as after a crash.
 */
const STOP_DATABASE_MS = 6_000;

/** Runs a stop's steps that need the database until STOP_DATABASE_MS have passed, and none after. */
function databaseSteps(log: Logger): (step: () => Promise<unknown> | undefined) => Promise<void> {
  const late = Symbol('late');
  const deadline = new Promise<typeof late>((resolve) => setTimeout(() => resolve(late), STOP_DATABASE_MS).unref());
  let gaveUp = false;
  return async (step) => {
    if (gaveUp || (await Promise.race([step(), deadline])) !== late) return;
    gaveUp = true;
    log.warn(`the database did not let the stop end within ${STOP_DATABASE_MS / 1000} s; stopping without it`);
  };
}

import pg from 'pg';
import { Prisma as Sql, type Prisma as Generated, type Download as Row } from '../../generated/prisma/client.ts';
import { inTransaction } from '../db/pool.ts';
import { camelRow } from '../db/rows.ts';
import type { Prisma } from '../db/prisma.ts';
import type { DownloadError } from '../core/errors.ts';
import type { Caller } from './caller.ts';
import { INSERT_DOWNLOADS, LOCK_OWNERS } from './create-sql.ts';
import { ACTIVE_STATUSES, type DownloadStatus } from '../core/statuses.ts';
import { DOWNLOAD_QUEUE, JOB_TABLE, LIVE_JOB_STATES } from '../queue/index.ts';

// Every read and write of the downloads table. Each state change is guarded by the states it may
// come from, so that a late or repeated job can never move a download backwards (a completed one
// back to downloading, say); the changes an attempt makes are guarded by its claim as well.

/** What a create writes; the other columns start at their defaults. */
export type NewDownload = Pick<
  Row,
  | 'id'
  | 'owner'
  | 'url'
  | 'quality'
  | 'requestedFilename'
  | 'callbackUrl'
  | 'mode'
  | 'audioFormat'
  | 'subtitles'
  | 'clipStartSeconds'
  | 'clipEndSeconds'
  | 'callbackState'
  | 'linkBase'
  | 'idempotencyKey'
  | 'requestHash'
>;
/**
 * A collection's child as it is written: `held` ones get their job when a place among the
 * collection's running children frees up; a refused one (`errorCode`) is made `failed` at once.
 */
export type NewChild = NewDownload & {
  collectionId: string;
  collectionIndex: number;
  held: boolean;
  errorCode: string | null;
  errorMessage: string | null;
};
export type Transaction = Generated.TransactionClient;

/**
 * Runs in the transaction that ends downloads (`completed`, `failed` or `cancelled`), with their
 * rows as they now are: what it writes (a webhook's job) commits with the change or not at all.
 */
export type EndedHook = (rows: Row[], tx: Transaction) => Promise<void>;

/** What a DELETE did: cancelled a download that had not ended, expired a completed one, or nothing. */
export type Cancellation =
  /** `unheld`: no attempt held it (it waited in the queue, or its worker died), so its files are nobody's. */
  { kind: 'cancelled'; row: Row; unheld: boolean } | { kind: 'expired'; row: Row } | { kind: 'unchanged'; row: Row } | { kind: 'unknown' };

/**
 * A position in the list, the last row of a page: newest first, by creation; or among a
 * collection's children, by index (index 0 is before the first).
 */
export type ListPosition = { kind: 'newest'; createdAt: Date; id: string } | { kind: 'children'; collectionId: string; index: number };

export type CallbackOutcome = { state: 'pending' | 'delivered' | 'failed'; lastError: string | null };

/** One claimed attempt: the download and the attempt number its claim gave it. */
export type AttemptKey = { id: string; number: number };

export type Claim =
  | { kind: 'claimed'; row: Row; afterCrash: boolean }
  /** Another attempt's lease on it has not run out. */
  | { kind: 'held' }
  /** Finished, or unknown: there is nothing to attempt. */
  | { kind: 'ended' };

/** How the media was found: the contract's source kind, the extractor of a site, the title; text already bounded. */
export type FoundSource = { kind: string; extractor: string | null; title: string | null };

export type Progress = { downloadedBytes: number; totalBytes: number | null; speedBytesPerSecond: number | null };

export type StoredFile = {
  fileName: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  audioCodec: string | null;
  videoCodec: string | null;
  fileSubtitles: { language: string | null; label: string | null }[];
};

/** A stored file as its completed download records it, with the token that retrieves it. */
export type CompletedFile = StoredFile & { tokenSecret: string; completedAt: Date; expiresAt: Date };

const ACTIVE: DownloadStatus[] = [...ACTIVE_STATUSES];
/** The ends a download's webhook announces. */
const ENDINGS: DownloadStatus[] = ['completed', 'failed', 'cancelled'];
/** An attempt holds its download while the download is in one of these. */
const RUNNING = ACTIVE.filter((status) => status !== 'queued');

/** `RETURNING *` of the downloads table as a row. */
function toRow(columns: Record<string, unknown>): Row {
  return camelRow<Row>(columns);
}

/** Values read through pg as Prisma reads them: int8 as bigint (pg's own reading is a string). */
const INT8: number = pg.types.builtins.INT8;
const PRISMA_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT8 ? BigInt : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** The rows a caller may see: its own, or all. */
function visibleTo(caller: Caller): Generated.DownloadWhereInput {
  return caller.sees === 'all' ? {} : { owner: caller.owner };
}

/** The same, as SQL on the downloads table. */
function visibleSql(caller: Caller): Sql.Sql {
  return caller.sees === 'all' ? Sql.empty : Sql.sql`AND owner = ${caller.owner}`;
}

/** An id no download has (a version 4 UUID is never all zeros). */
const NO_DOWNLOAD = '00000000-0000-0000-0000-000000000000';

function ids(rows: { id: string }[]): string[] {
  return rows.map((row) => row.id);
}

export class DownloadRepository {
  constructor(
    private readonly prisma: Prisma,
    /** The pool Prisma runs on, for what is written as SQL. */
    private readonly pool: pg.Pool,
    private readonly onEnded: EndedHook = async () => {},
  ) {}

  /**
   * Runs each query a download's life makes through Prisma once, on an id no row has, so that
   * nothing is changed: Prisma compiles a query of a new shape on the event loop, which the first
   * download would otherwise wait for. Call before serving; the queries go one after another, each
   * a turn of the loop of its own.
   */
  async warmUp(): Promise<void> {
    const nobody: AttemptKey = { id: NO_DOWNLOAD, number: 0 };
    const file: CompletedFile = {
      fileName: '',
      contentType: '',
      sizeBytes: 0,
      sha256: '',
      durationSeconds: null,
      width: null,
      height: null,
      audioCodec: null,
      videoCodec: null,
      fileSubtitles: [],
      tokenSecret: '',
      completedAt: new Date(),
      expiresAt: new Date(),
    };
    await this.find(NO_DOWNLOAD);
    await this.findFor(NO_DOWNLOAD, { owner: '', sees: 'own' });
    await this.findFor(NO_DOWNLOAD, { owner: '', sees: 'all' });
    await this.findByIdempotencyKey('', '');
    await this.recordProgress(nobody, { downloadedBytes: 0, totalBytes: 0, speedBytesPerSecond: 0 });
    await this.recordProgress(nobody, { downloadedBytes: 0, totalBytes: null, speedBytesPerSecond: null });
    await this.rememberSourceValidator(nobody, null);
    await this.recordSource(nobody, { kind: '', extractor: null, title: null });
    await this.markProcessing(nobody, 0);
    await this.markCompleted(nobody, file);
    await this.activeAmong([NO_DOWNLOAD]);
  }

  /** Resolves when the database answers and holds the downloads table (the migrations ran). */
  async ping(): Promise<void> {
    await this.prisma.$queryRaw`SELECT 1 FROM downloads LIMIT 1`;
  }

  find(id: string): Promise<Row | null> {
    return this.prisma.download.findUnique({ where: { id } });
  }

  /**
   * The download, if the caller may see it. Another owner's download and one that does not exist
   * are the same single lookup by primary key that finds nothing, so that neither the answer nor
   * its time tells them apart.
   */
  findFor(id: string, caller: Caller): Promise<Row | null> {
    return this.prisma.download.findFirst({ where: { id, ...visibleTo(caller) } });
  }

  findByIdempotencyKey(owner: string, idempotencyKey: string): Promise<Row | null> {
    return this.prisma.download.findUnique({ where: { owner_idempotencyKey: { owner, idempotencyKey } } });
  }

  /**
   * Inserts the downloads, each with its job: a row commits with its job or not at all. `limits`
   * bounds the downloads not yet ended of the owners it names: rows beyond an owner's bound are
   * left out (the caller sees which by their ids). Each such owner is locked for the transaction,
   * so that creates racing on several processes cannot pass the bound together.
   */
  async insertMany(data: NewDownload[], limits = new Map<string, number>()): Promise<Row[]> {
    const query = {
      // Prepared once on each connection: the statement is long, and every batch runs it.
      name: 'insert-downloads',
      text: INSERT_DOWNLOADS,
      values: [JSON.stringify(data), new Date(), JSON.stringify([...limits].map(([owner, limit]) => ({ owner, limit })))],
      types: PRISMA_TYPES,
    };
    const result = limits.size
      ? await inTransaction(this.pool, async (client) => {
          await client.query(LOCK_OWNERS, [[...limits.keys()].sort()]);
          return client.query<Record<string, unknown>>(query);
        })
      : await this.pool.query<Record<string, unknown>>(query);
    return result.rows.map(toRow);
  }

  /**
   * Starts the next attempt, leased for `leaseSeconds`, unless another attempt's lease still holds.
   * `afterCrash` says the attempt before never recorded an outcome: its process died.
   */
  async claim(id: string, leaseSeconds: number): Promise<Claim> {
    const now = new Date();
    const [claimed] = await this.prisma.$queryRaw<({ previous: DownloadStatus } & Record<string, unknown>)[]>`
      UPDATE downloads d
         SET status = 'downloading', attempts = d.attempts + 1, started_at = COALESCE(d.started_at, ${now}),
             speed_bytes_per_second = NULL, lease_expires_at = now() + make_interval(secs => ${leaseSeconds}), updated_at = ${now}
        FROM (SELECT id, status AS previous FROM downloads WHERE id = ${id}::uuid FOR UPDATE) before
       WHERE d.id = before.id AND d.status = ANY(${ACTIVE}::download_status[])
         AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
   RETURNING d.*, before.previous`;
    if (claimed) {
      const { previous, ...columns } = claimed;
      return { kind: 'claimed', row: toRow(columns), afterCrash: previous !== 'queued' };
    }
    const row = await this.find(id);
    return row && ACTIVE.includes(row.status) ? { kind: 'held' } : { kind: 'ended' };
  }

  /** False once the attempt no longer holds its download. Dates come from the database's clock, as the claim's do. */
  async renewLease(attempt: AttemptKey, leaseSeconds: number): Promise<boolean> {
    const count = await this.prisma.$executeRaw`
      UPDATE downloads SET lease_expires_at = now() + make_interval(secs => ${leaseSeconds})
       WHERE id = ${attempt.id}::uuid AND attempts = ${attempt.number} AND status = ANY(${RUNNING}::download_status[])`;
    return count === 1;
  }

  async recordProgress(attempt: AttemptKey, progress: Progress): Promise<void> {
    await this.prisma.download.updateMany({
      where: { id: attempt.id, attempts: attempt.number, status: 'downloading' },
      data: {
        downloadedBytes: BigInt(progress.downloadedBytes),
        totalBytes: progress.totalBytes === null ? null : BigInt(progress.totalBytes),
        speedBytesPerSecond: progress.speedBytesPerSecond,
      },
    });
  }

  async rememberSourceValidator(attempt: AttemptKey, validator: string | null): Promise<void> {
    await this.prisma.download.updateMany({ where: this.held(attempt), data: { sourceValidator: validator } });
  }

  async recordSource(attempt: AttemptKey, source: FoundSource): Promise<void> {
    await this.prisma.download.updateMany({
      where: this.held(attempt),
      data: { sourceKind: source.kind, sourceExtractor: source.extractor, sourceTitle: source.title },
    });
  }

  /** Every byte is in by now, so the count the last progress write may have held back goes with it. */
  async markProcessing(attempt: AttemptKey, fetchedBytes: number): Promise<void> {
    await this.prisma.download.updateMany({
      where: { id: attempt.id, attempts: attempt.number, status: 'downloading' },
      data: { status: 'processing', speedBytesPerSecond: null, downloadedBytes: BigInt(fetchedBytes), totalBytes: BigInt(fetchedBytes) },
    });
  }

  async markCompleted(attempt: AttemptKey, file: CompletedFile): Promise<boolean> {
    const rows = await this.ending((tx) =>
      tx.download.updateManyAndReturn({
        where: this.held(attempt),
        data: {
          status: 'completed',
          ...file,
          sizeBytes: BigInt(file.sizeBytes),
          downloadedBytes: BigInt(file.sizeBytes),
          totalBytes: BigInt(file.sizeBytes),
          speedBytesPerSecond: null,
          leaseExpiresAt: null,
          errorCode: null,
          errorMessage: null,
          errorRetryable: null,
        },
      }),
    );
    return rows.length === 1;
  }

  /**
   * Back to the queue, after a transient failure (whose error stays visible until the next outcome)
   * or because the attempt was interrupted (null: the last error, if any, is kept, and the attempt
   * does not count: a service restarted any number of times must not use up MAX_ATTEMPTS).
   */
  async markRetrying(attempt: AttemptKey, error: DownloadError | null): Promise<void> {
    const errorFields = error ? { errorCode: error.code, errorMessage: error.message, errorRetryable: true } : { attempts: { decrement: 1 } };
    await this.prisma.download.updateMany({
      where: this.held(attempt),
      data: { status: 'queued', speedBytesPerSecond: null, leaseExpiresAt: null, ...errorFields },
    });
  }

  /** False when the attempt no longer held its download, so nothing of it may be cleaned up. */
  async markFailed(attempt: AttemptKey, error: DownloadError): Promise<boolean> {
    const rows = await this.ending((tx) =>
      tx.download.updateManyAndReturn({
        where: this.held(attempt),
        data: {
          status: 'failed',
          speedBytesPerSecond: null,
          leaseExpiresAt: null,
          errorCode: error.code,
          errorMessage: error.message,
          errorRetryable: error.retryable,
        },
      }),
    );
    return rows.length === 1;
  }

  /**
   * DELETE: a download that has not ended becomes `cancelled` (any attempt at it loses its claim,
   * and no claim can take it again), a completed one `expired` at once. One locked update, so
   * that a completion racing it either lands first (and is then expired) or finds it cancelled.
   */
  async cancel(id: string, caller: Caller): Promise<Cancellation> {
    const rows = await this.ending(async (tx) =>
      (
        await tx.$queryRaw<({ previous: DownloadStatus; unheld: boolean } & Record<string, unknown>)[]>`
          UPDATE downloads d
             SET status = CASE WHEN d.status = 'completed' THEN 'expired' ELSE 'cancelled' END::download_status,
                 expires_at = CASE WHEN d.status = 'completed' THEN now() ELSE d.expires_at END,
                 speed_bytes_per_second = NULL, lease_expires_at = NULL, updated_at = now()
            FROM (SELECT id, status AS previous, (lease_expires_at IS NULL OR lease_expires_at <= now()) AS unheld
                    FROM downloads WHERE id = ${id}::uuid ${visibleSql(caller)} FOR UPDATE) before
           WHERE d.id = before.id AND d.status = ANY(${[...ACTIVE, 'completed']}::download_status[])
       RETURNING d.*, before.previous, before.unheld`
      ).map(({ previous, unheld, ...columns }) => Object.assign(toRow(columns), { previous, unheld })),
    );
    const [changed] = rows;
    if (changed) {
      const { previous, unheld, ...row } = changed;
      return previous === 'completed' ? { kind: 'expired', row } : { kind: 'cancelled', row, unheld };
    }
    const row = await this.findFor(id, caller);
    return row ? { kind: 'unchanged', row } : { kind: 'unknown' };
  }

  /**
   * A page of the caller's downloads after `after` (the last row of the page before): newest
   * first, or a collection's children in their collection's order.
   */
  list(options: { caller: Caller; statuses: DownloadStatus[] | undefined; limit: number; after: ListPosition | undefined }): Promise<Row[]> {
    const { caller, statuses, limit, after } = options;
    const status = statuses ? Sql.sql`AND status = ANY(${statuses}::download_status[])` : Sql.empty;
    if (after?.kind === 'children') {
      return this.prisma.$queryRaw<Record<string, unknown>[]>`
        SELECT * FROM downloads WHERE collection_id = ${after.collectionId}::uuid AND collection_index > ${after.index}
               ${visibleSql(caller)} ${status}
         ORDER BY collection_index LIMIT ${limit}`.then((rows) => rows.map(toRow));
    }
    const position = after ? Sql.sql`AND (created_at, id) < (${after.createdAt}, ${after.id}::uuid)` : Sql.empty;
    return this.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT * FROM downloads WHERE true ${visibleSql(caller)} ${status} ${position}
       ORDER BY created_at DESC, id DESC LIMIT ${limit}`.then((rows) => rows.map(toRow));
  }

  /** Records one delivery of a download's webhook. */
  async recordCallback(id: string, outcome: CallbackOutcome): Promise<void> {
    await this.prisma.download.update({
      where: { id },
      data: { callbackAttempts: { increment: 1 }, callbackState: outcome.state, callbackLastError: outcome.lastError },
    });
  }

  /**
   * Fails the downloads that wait for or run an attempt that will never come: pg-boss holds no job
   * for them any more (it gave up, or the job was deleted). One whose lease still holds is left to
   * the attempt running it. Returns their ids.
   */
  async failWithoutJob(error: DownloadError, now = new Date()): Promise<string[]> {
    const rows = await this.ending(async (tx) =>
      (
        await tx.$queryRaw<Record<string, unknown>[]>`
        UPDATE downloads d
           SET status = 'failed', error_code = ${error.code}, error_message = ${error.message}, error_retryable = ${error.retryable},
               speed_bytes_per_second = NULL, lease_expires_at = NULL, updated_at = ${now}
         WHERE d.status = ANY(${ACTIVE}::download_status[])
           AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
           -- A collection's child waiting for its place has no job yet, by design.
           AND NOT EXISTS (SELECT 1 FROM collections c WHERE c.id = d.collection_id AND d.collection_index > c.released_through)
           AND NOT EXISTS (
                 SELECT 1 FROM ${Sql.raw(JOB_TABLE)} j
                  WHERE j.name = ${DOWNLOAD_QUEUE} AND j.state::text = ANY(${LIVE_JOB_STATES}) AND j.data->>'download_id' = d.id::text)
     RETURNING d.*`
      ).map(toRow),
    );
    return ids(rows);
  }

  /** Completed downloads whose time is up become `expired`; returns their ids, for their files to go. */
  async expireDue(now = new Date()): Promise<string[]> {
    return ids(
      await this.prisma.$queryRaw<{ id: string }[]>`
        UPDATE downloads SET status = 'expired', updated_at = ${now}
         WHERE status = 'completed' AND expires_at <= ${now}
     RETURNING id`,
    );
  }

  /**
   * Completed downloads whose file the store no longer has become `expired` now, as a DELETE makes
   * them; returns the rows changed (one another process changed first is not among them).
   */
  async expireLost(candidates: string[]): Promise<Row[]> {
    return (
      await this.prisma.$queryRaw<Record<string, unknown>[]>`
        UPDATE downloads SET status = 'expired', expires_at = LEAST(expires_at, now()), updated_at = now()
         WHERE id = ANY(${candidates}::uuid[]) AND status = 'completed'
     RETURNING *`
    ).map(toRow);
  }

  /** Of `ids`, those whose downloads are still running or waiting to (their working files matter). */
  async activeAmong(candidates: string[]): Promise<Set<string>> {
    const rows = await this.prisma.download.findMany({ where: { id: { in: candidates }, status: { in: ACTIVE } }, select: { id: true } });
    return new Set(ids(rows));
  }

  /** Runs `change` in a transaction with the hook on the downloads it ended. */
  private ending<T extends Row>(change: (tx: Transaction) => Promise<T[]>): Promise<T[]> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await change(tx);
      const ended = rows.filter((row) => ENDINGS.includes(row.status));
      if (ended.length) await this.onEnded(ended, tx);
      return rows;
    });
  }

  /** The rows an attempt may still write: its claim is the latest, and no outcome has been recorded. */
  private held(attempt: AttemptKey): Generated.DownloadWhereInput {
    return { id: attempt.id, attempts: attempt.number, status: { in: RUNNING } };
  }
}

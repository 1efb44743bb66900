import { Prisma as Sql, type Collection as Row, type Download as DownloadRow } from '../../generated/prisma/client.ts';
import type { DownloadError } from '../core/errors.ts';
import { ACTIVE_STATUSES, type DownloadStatus } from '../core/statuses.ts';
import type { Prisma } from '../db/prisma.ts';
import { camelRow } from '../db/rows.ts';
import type { Caller } from '../downloads/caller.ts';
import { ACTIVE_PER_OWNER, INSERT_DOWNLOADS, LOCK_OWNERS, RELEASE_DOWNLOADS } from '../downloads/create-sql.ts';
import type { EndedHook, NewChild, Transaction } from '../downloads/repository.ts';
import { COLLECTION_QUEUE, JOB_TABLE, LIVE_JOB_STATES } from '../queue/index.ts';
import { queueJobs } from '../queue/job-sql.ts';

// Every read and write of the collections table, and of downloads as a collection's children.
// A collection's row is locked (FOR UPDATE) by whatever changes what it runs: its expansion, the
// end of a child, its cancel; so the places among its running children are counted by one at a
// time. A transaction that ends a child locks the child first and the collection second; so does
// every other, or two could wait for each other.

export type CollectionRow = Row;
export type CollectionStatus = Row['status'];
export type Counts = { total: number } & Record<DownloadStatus, number>;

/** What a create writes; the other columns start at their defaults. */
export type NewCollection = Pick<
  Row,
  | 'id'
  | 'owner'
  | 'kind'
  | 'name'
  | 'url'
  | 'quality'
  | 'mode'
  | 'audioFormat'
  | 'subtitles'
  | 'clipStartSeconds'
  | 'clipEndSeconds'
  | 'callbackUrl'
  | 'entryLimit'
  | 'entryPicks'
  | 'linkBase'
  | 'idempotencyKey'
  | 'requestHash'
>;

/** What an expansion found: the children to make, and what the source said of itself. */
export type Expansion = { title: string | null; extractor: string | null; truncated: boolean; children: NewChild[] };

/** A collection and how many of its children are in each state. */
export type Counted = { row: Row; counts: Counts };

/** Runs in the transaction that ends collections, with them as they now are (their webhook). */
export type CollectionEndedHook = (ended: Counted[], tx: Transaction) => Promise<void>;

/** A child a cancel stopped: `unheld` when no attempt held it, so its files are nobody's. */
export type CancelledChild = { id: string; unheld: boolean };

export type Cancellation = { kind: 'cancelled'; row: Row; children: CancelledChild[] } | { kind: 'unchanged'; row: Row } | { kind: 'unknown' };

const ACTIVE: DownloadStatus[] = [...ACTIVE_STATUSES];
const UNFINISHED: CollectionStatus[] = ['expanding', 'running'];
const EMPTY_COUNTS: Counts = { total: 0, queued: 0, downloading: 0, processing: 0, completed: 0, failed: 0, cancelled: 0, expired: 0 };

function toRow(columns: Record<string, unknown>): Row {
  return camelRow<Row>(columns);
}

function visibleSql(caller: Caller): Sql.Sql {
  return caller.sees === 'all' ? Sql.empty : Sql.sql`AND owner = ${caller.owner}`;
}

export type CollectionDeps = {
  /** Children of one collection that run at once. */
  concurrency: number;
  /** What ending a download does besides (its webhook): children this repository ends go through it. */
  childrenEnded: EndedHook;
  collectionEnded: CollectionEndedHook;
};

export class CollectionRepository {
  constructor(
    private readonly prisma: Prisma,
    private readonly deps: CollectionDeps,
  ) {}

  /**
   * The downloads' ended hook: what ending any download does (its webhook), and, for a
   * collection's children, giving the places they free to the next of their collection.
   */
  readonly downloadsEnded: EndedHook = async (rows, tx) => {
    await this.deps.childrenEnded(rows, tx);
    const collections = [...new Set(rows.flatMap((row) => (row.collectionId ? [row.collectionId] : [])))];
    if (collections.length) await this.advance(collections, tx);
  };

  find(id: string): Promise<Row | null> {
    return this.prisma.collection.findUnique({ where: { id } });
  }

  /** The collection, if the caller may see it (another owner's is not found, as one that does not exist). */
  findFor(id: string, caller: Caller): Promise<Row | null> {
    return this.prisma.collection.findFirst({ where: { id, ...(caller.sees === 'all' ? {} : { owner: caller.owner }) } });
  }

  findByIdempotencyKey(owner: string, idempotencyKey: string): Promise<Row | null> {
    return this.prisma.collection.findUnique({ where: { owner_idempotencyKey: { owner, idempotencyKey } } });
  }

  /** How many of each collection's children are in each state. */
  async counts(ids: string[], db: Pick<Transaction, '$queryRaw'> = this.prisma): Promise<Map<string, Counts>> {
    const rows = await db.$queryRaw<{ collection_id: string; status: DownloadStatus; n: number }[]>`
      SELECT collection_id, status, count(*)::int AS n FROM downloads
       WHERE collection_id = ANY(${ids}::uuid[]) GROUP BY collection_id, status`;
    const counts = new Map(ids.map((id) => [id, { ...EMPTY_COUNTS }]));
    for (const row of rows) {
      const of = counts.get(row.collection_id)!;
      of[row.status] = row.n;
      of.total += row.n;
    }
    return counts;
  }

  /** A page of the caller's collections, newest first, after the position given. */
  list(options: {
    caller: Caller;
    statuses: CollectionStatus[] | undefined;
    subscriptionId: string | undefined;
    limit: number;
    after: { createdAt: Date; id: string } | undefined;
  }): Promise<Row[]> {
    const { caller, statuses, subscriptionId, limit, after } = options;
    const position = after ? Sql.sql`AND (created_at, id) < (${after.createdAt}, ${after.id}::uuid)` : Sql.empty;
    const status = statuses ? Sql.sql`AND status = ANY(${statuses}::collection_status[])` : Sql.empty;
    const subscription = subscriptionId ? Sql.sql`AND subscription_id = ${subscriptionId}::uuid` : Sql.empty;
    return this.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT * FROM collections WHERE true ${visibleSql(caller)} ${status} ${subscription} ${position}
       ORDER BY created_at DESC, id DESC LIMIT ${limit}`.then((rows) => rows.map(toRow));
  }

  /**
   * Records a collection: with `children` (a batch) running at once, else expanding with the job
   * that expands it. With `limit`, its owner may have at most that many downloads and collections
   * not yet ended, this one included: null when it has as many already.
   */
  async create(data: NewCollection, children: NewChild[] | null, limit: number | undefined): Promise<Row | null> {
    return this.prisma.$transaction(async (tx) => {
      if (limit !== undefined) {
        await tx.$executeRawUnsafe(LOCK_OWNERS, [data.owner]);
        const [counted] = await tx.$queryRawUnsafe<{ active: number }[]>(
          `WITH bound AS (SELECT $1::text AS owner) SELECT COALESCE((SELECT sum(active) FROM (${ACTIVE_PER_OWNER}) a), 0)::int AS active`,
          data.owner,
        );
        if ((counted?.active ?? 0) >= limit) return null;
      }
      if (children) return this.createRunning(data, children, tx);
      const now = new Date();
      const row = await tx.collection.create({ data: { ...data, status: 'expanding', createdAt: now, updatedAt: now } });
      await tx.$queryRawUnsafe(
        `WITH ${queueJobs(COLLECTION_QUEUE, "jsonb_build_object('collection_id', s.id)", '(SELECT $1::uuid AS id) s')}
         SELECT count(*)::int FROM jobs WHERE (SELECT count(*) FROM woken) >= 0`,
        row.id,
      );
      return row;
    });
  }

  /**
   * Records a collection whose entries are known (a batch, a subscription's check) as `running`
   * with its children, in the caller's transaction, and starts the first of them.
   */
  async createRunning(data: NewCollection & Partial<Pick<Row, 'title' | 'extractor' | 'subscriptionId'>>, children: NewChild[], tx: Transaction): Promise<Row> {
    const now = new Date();
    const row = await tx.collection.create({ data: { ...data, status: 'running', expandedAt: now, createdAt: now, updatedAt: now } });
    await this.insertChildren(children, now, tx);
    await this.advance([row.id], tx);
    return (await tx.collection.findUnique({ where: { id: row.id } }))!;
  }

  /**
   * Makes the children an expansion found, in one transaction with the collection becoming
   * `running`; nothing when it is no longer expanding (cancelled meanwhile, or expanded by an
   * earlier run of its job). Returns whether it did.
   */
  async expand(id: string, expansion: Expansion): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ status: CollectionStatus }[]>`SELECT status FROM collections WHERE id = ${id}::uuid FOR UPDATE`;
      if (locked?.status !== 'expanding') return false;
      const now = new Date();
      await tx.collection.update({
        where: { id },
        data: { status: 'running', title: expansion.title, extractor: expansion.extractor, truncated: expansion.truncated, expandedAt: now },
      });
      await this.insertChildren(expansion.children, now, tx);
      await this.advance([id], tx);
      return true;
    });
  }

  /** Expanding failed for good: the collection fails with its error; false when it was no longer expanding. */
  async failExpansion(id: string, error: DownloadError): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await tx.collection.updateManyAndReturn({
        where: { id, status: 'expanding' },
        data: { status: 'failed', finishedAt: new Date(), errorCode: error.code, errorMessage: error.message, errorRetryable: error.retryable },
      });
      if (rows.length) await this.ended(rows, tx);
      return rows.length > 0;
    });
  }

  /**
   * Fails the collections waiting to be expanded whose job pg-boss no longer holds (it gave up, or
   * the job was deleted): they would wait for ever. Returns how many.
   */
  async failExpansionsWithoutJob(error: DownloadError): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const rows = (
        await tx.$queryRaw<Record<string, unknown>[]>`
          UPDATE collections c
             SET status = 'failed', finished_at = now(), updated_at = now(),
                 error_code = ${error.code}, error_message = ${error.message}, error_retryable = ${error.retryable}
           WHERE c.status = 'expanding'
             AND NOT EXISTS (
                   SELECT 1 FROM ${Sql.raw(JOB_TABLE)} j
                    WHERE j.name = ${COLLECTION_QUEUE} AND j.state::text = ANY(${LIVE_JOB_STATES}) AND j.data->>'collection_id' = c.id::text)
       RETURNING c.*`
      ).map(toRow);
      if (rows.length) await this.ended(rows, tx);
      return rows.length;
    });
  }

  /** Cancels whose second half was cut short (the process died between them): finished now. */
  async finishCutCancels(): Promise<void> {
    const cut = await this.prisma.collection.findMany({ where: { status: 'cancelled', finishedAt: null }, select: { id: true } });
    for (const { id } of cut) await this.cancel(id, { owner: '', sees: 'all' });
  }

  /**
   * DELETE: a collection not yet ended becomes `cancelled`, then its children not yet ended are
   * cancelled. Two transactions, so that the collection is never locked before a child (see the
   * top); a repeat finishes what a cancel cut short left (`finished_at` is set once it is done).
   */
  async cancel(id: string, caller: Caller): Promise<Cancellation> {
    const flipped = await this.prisma.collection.updateMany({
      where: { id, status: { in: UNFINISHED }, ...(caller.sees === 'all' ? {} : { owner: caller.owner }) },
      data: { status: 'cancelled' },
    });
    const found = await this.findFor(id, caller);
    if (!found) return { kind: 'unknown' };
    if (found.status !== 'cancelled' || (found.finishedAt && flipped.count === 0)) return { kind: 'unchanged', row: found };
    return this.prisma.$transaction(async (tx) => {
      const children = (
        await tx.$queryRaw<({ unheld: boolean } & Record<string, unknown>)[]>`
          UPDATE downloads d
             SET status = 'cancelled', speed_bytes_per_second = NULL, lease_expires_at = NULL, updated_at = now()
            FROM (SELECT id, (lease_expires_at IS NULL OR lease_expires_at <= now()) AS unheld
                    FROM downloads WHERE collection_id = ${id}::uuid AND status = ANY(${ACTIVE}::download_status[])
                   ORDER BY id FOR UPDATE) before
           WHERE d.id = before.id AND d.status = ANY(${ACTIVE}::download_status[])
       RETURNING d.*, before.unheld`
      ).map(({ unheld, ...columns }) => Object.assign(camelRow<DownloadRow>(columns), { unheld }));
      if (children.length) await this.deps.childrenEnded(children, tx);
      const ended = await tx.collection.updateManyAndReturn({ where: { id, status: 'cancelled', finishedAt: null }, data: { finishedAt: new Date() } });
      if (ended.length) await this.ended(ended, tx);
      const row = ended[0] ?? (await tx.collection.findUnique({ where: { id } }))!;
      return { kind: 'cancelled', row, children: children.map((child) => ({ id: child.id, unheld: child.unheld })) };
    });
  }

  private async ended(rows: Row[], tx: Transaction): Promise<void> {
    const counts = await this.counts(
      rows.map((row) => row.id),
      tx,
    );
    await this.deps.collectionEnded(
      rows.map((row) => ({ row, counts: counts.get(row.id)! })),
      tx,
    );
  }

  private async insertChildren(children: NewChild[], now: Date, tx: Transaction): Promise<void> {
    if (!children.length) return;
    const rows = (await tx.$queryRawUnsafe<Record<string, unknown>[]>(INSERT_DOWNLOADS, JSON.stringify(children), now, '[]')).map((columns) =>
      camelRow<DownloadRow>(columns),
    );
    // Refused entries are made failed: they end as they are made.
    const failed = rows.filter((row) => row.status === 'failed');
    if (failed.length) await this.deps.childrenEnded(failed, tx);
  }

  /**
   * Gives the places free among each running collection's children to the next that wait, in
   * index order, and completes one whose children have all ended. Idempotent: any transaction that
   * may have changed what a collection runs calls it.
   */
  private async advance(ids: string[], tx: Transaction): Promise<void> {
    const locked = await tx.$queryRaw<{ id: string; status: CollectionStatus; released_through: number }[]>`
      SELECT id, status, released_through FROM collections WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`;
    for (const collection of locked) {
      if (collection.status !== 'running') continue;
      const [state] = await tx.$queryRaw<{ running: number; unfinished: number }[]>`
        SELECT count(*) FILTER (WHERE collection_index <= ${collection.released_through})::int AS running, count(*)::int AS unfinished
          FROM downloads WHERE collection_id = ${collection.id}::uuid AND status = ANY(${ACTIVE}::download_status[])`;
      const free = this.deps.concurrency - state!.running;
      if (free > 0 && state!.unfinished > state!.running) {
        const next = await tx.$queryRaw<{ id: string; collection_index: number }[]>`
          SELECT id, collection_index FROM downloads
           WHERE collection_id = ${collection.id}::uuid AND collection_index > ${collection.released_through} AND status = 'queued'
           ORDER BY collection_index LIMIT ${free}`;
        await tx.$queryRawUnsafe(
          RELEASE_DOWNLOADS,
          next.map((child) => child.id),
        );
        await tx.$executeRaw`UPDATE collections SET released_through = ${next.at(-1)!.collection_index}, updated_at = now() WHERE id = ${collection.id}::uuid`;
      }
      if (state!.unfinished === 0) {
        const ended = await tx.collection.updateManyAndReturn({
          where: { id: collection.id, status: 'running' },
          data: { status: 'completed', finishedAt: new Date() },
        });
        if (ended.length) await this.ended(ended, tx);
      }
    }
  }
}

import { Prisma as Sql, type Subscription as Row } from '../../generated/prisma/client.ts';
import type { Counted, CollectionRepository, NewCollection } from '../collections/repository.ts';
import type { DownloadError } from '../core/errors.ts';
import type { Prisma } from '../db/prisma.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { camelRow } from '../db/rows.ts';
import type { Caller } from '../downloads/caller.ts';
import type { NewChild, Transaction } from '../downloads/repository.ts';
import { JOB_TABLE, LIVE_JOB_STATES, SUBSCRIPTION_QUEUE } from '../queue/index.ts';
import { queueJobs } from '../queue/job-sql.ts';

// Every read and write of subscriptions and the entries they have seen. A subscription's next
// check is its `next_check_at` and a job due then that carries it: every write that moves the one
// queues the other in the same transaction, and a job whose due time is no longer the row's is
// stale. A check holds the row (`checking_until`) so that one runs at a time, across processes;
// the entries it records and the collection it makes are one transaction, so nothing is seen
// without its download, or downloaded twice.

export type SubscriptionRow = Row;

/** The columns of what each download is to be: written on create, changed by PATCH. */
type TemplateColumn = 'quality' | 'mode' | 'audioFormat' | 'subtitles' | 'clipStartSeconds' | 'clipEndSeconds' | 'callbackUrl';

/** What a create writes; the other columns start at their defaults. */
export type NewSubscription = Pick<
  Row,
  'id' | 'owner' | 'url' | 'urlKey' | 'name' | 'intervalSeconds' | 'titleContains' | 'backfill' | TemplateColumn | 'linkBase'
>;

/** What PATCH may change. */
export type SubscriptionChanges = Partial<Pick<Row, 'enabled' | 'intervalSeconds' | 'name' | 'titleContains' | TemplateColumn>>;

/** An entry as a subscription keeps it: `archived` when its key is an archive line (`<extractor> <id>`). */
export type SeenEntry = { key: string; archived: boolean };

export type Created = { kind: 'created'; row: Row } | { kind: 'exists'; id: string } | { kind: 'over_limit'; limit: number };

export type Claim = { kind: 'claimed'; row: Row } | { kind: 'busy' } | { kind: 'gone' };

/** What a check found: every entry listed, and the children of those that are new and wanted. */
export type CheckRecord = {
  title: string | null;
  extractor: string;
  seen: SeenEntry[];
  /** Keyed by the entry's key: made only when that key is new. */
  children: Map<string, NewChild>;
  collection: Omit<NewCollection, 'entryLimit'> & { subscriptionId: string };
};

/** Runs in the transaction of a check that made a collection (the webhook). */
export type CheckedHook = (subscription: Row, seenCount: number, collection: Counted, tx: Transaction) => Promise<void>;

/** Failed checks in a row put the next off by 1, 2, 4, then at most 8 intervals (`failures` as it was before this one). */
const BACKOFF_SQL = `interval_seconds * power(2, least(failures, 3)) * interval '1s'`;

/** The subscription's jobs not yet taken (stale once its due time moves, or it is gone): each would run only to find nothing to do. */
const UNTAKEN_JOBS = `DELETE FROM ${JOB_TABLE} WHERE name = '${SUBSCRIPTION_QUEUE}' AND state = 'created' AND data->>'subscription_id' = $1::text`;

/** The statement that queues the job of a subscription's next check, in place of any not yet taken. */
const SCHEDULE = `
  WITH dropped AS (${UNTAKEN_JOBS}), ${queueJobs(
    SUBSCRIPTION_QUEUE,
    "jsonb_build_object('subscription_id', s.id, 'due', s.next_check_at)",
    '(SELECT id, next_check_at FROM subscriptions WHERE id = $1::uuid AND enabled AND next_check_at IS NOT NULL) s',
    's.next_check_at',
  )}
  SELECT count(*)::int FROM jobs WHERE (SELECT count(*) FROM woken) >= 0`;

function toRow(columns: Record<string, unknown>): Row {
  return camelRow<Row>(columns);
}

function ownedBy(caller: Caller): { owner?: string } {
  return caller.sees === 'all' ? {} : { owner: caller.owner };
}

export class SubscriptionRepository {
  constructor(
    private readonly prisma: Prisma,
    private readonly deps: { collections: CollectionRepository; checked: CheckedHook },
  ) {}

  find(id: string): Promise<Row | null> {
    return this.prisma.subscription.findUnique({ where: { id } });
  }

  /** The subscription, if the caller may see it (another owner's is not found, as one that does not exist). */
  findFor(id: string, caller: Caller): Promise<Row | null> {
    return this.prisma.subscription.findFirst({ where: { id, ...ownedBy(caller) } });
  }

  /** A page of the caller's subscriptions, newest first, after the position given. */
  list(options: { caller: Caller; limit: number; after: { createdAt: Date; id: string } | undefined }): Promise<Row[]> {
    const { caller, limit, after } = options;
    const owner = caller.sees === 'all' ? Sql.empty : Sql.sql`AND owner = ${caller.owner}`;
    const position = after ? Sql.sql`AND (created_at, id) < (${after.createdAt}, ${after.id}::uuid)` : Sql.empty;
    return this.prisma.$queryRaw<Record<string, unknown>[]>`
      SELECT * FROM subscriptions WHERE true ${owner} ${position} ORDER BY created_at DESC, id DESC LIMIT ${limit}`.then((rows) => rows.map(toRow));
  }

  /** How many entries each subscription has seen. */
  async seenCounts(ids: string[], db: Pick<Transaction, '$queryRaw'> = this.prisma): Promise<Map<string, number>> {
    const rows = await db.$queryRaw<{ subscription_id: string; n: number }[]>`
      SELECT subscription_id, count(*)::int AS n FROM subscription_entries WHERE subscription_id = ANY(${ids}::uuid[]) GROUP BY subscription_id`;
    const counts = new Map(ids.map((id) => [id, 0]));
    for (const row of rows) counts.set(row.subscription_id, row.n);
    return counts;
  }

  /** The archive lines of the entries seen, in the order they were seen. */
  async archive(id: string): Promise<string[]> {
    const rows = await this.prisma.subscriptionEntry.findMany({
      where: { subscriptionId: id, archived: true },
      orderBy: [{ seenAt: 'asc' }, { key: 'asc' }],
      select: { key: true },
    });
    return rows.map((row) => row.key);
  }

  /**
   * Records a subscription due at once, with `seen` (an imported archive) and its first job. With
   * `limit`, its owner may hold at most that many: `over_limit` when it has as many already. One
   * owner follows a URL once: `exists` names the one that does.
   */
  async create(data: NewSubscription, seen: SeenEntry[], limit: number | undefined): Promise<Created> {
    const existing = (db: Pick<Transaction, 'subscription'> = this.prisma) =>
      db.subscription.findUnique({ where: { owner_urlKey: { owner: data.owner, urlKey: data.urlKey } }, select: { id: true } });
    try {
      return await this.prisma.$transaction(async (tx) => {
        if (limit !== undefined) {
          await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(hashtextextended('subscriptions:' || $1, 0))`, data.owner);
          const held = await tx.subscription.count({ where: { owner: data.owner } });
          if (held >= limit) {
            const found = await existing(tx);
            return found ? { kind: 'exists', id: found.id } : { kind: 'over_limit', limit };
          }
        }
        const now = new Date();
        const row = await tx.subscription.create({ data: { ...data, nextCheckAt: now, createdAt: now, updatedAt: now } });
        await this.see(row.id, seen, tx);
        await this.schedule(row.id, tx);
        return { kind: 'created', row };
      });
    } catch (error) {
      const found = isUniqueViolation(error) ? await existing() : null;
      if (found) return { kind: 'exists', id: found.id };
      throw error;
    }
  }

  /**
   * PATCH: the changes, and the next check they make: none while paused, at once when resumed,
   * else an interval after the last check (or now, if that is past).
   */
  async update(id: string, caller: Caller, changes: SubscriptionChanges): Promise<Row | null> {
    return this.prisma.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<Record<string, unknown>[]>`
        SELECT * FROM subscriptions WHERE id = ${id}::uuid ${caller.sees === 'all' ? Sql.empty : Sql.sql`AND owner = ${caller.owner}`} FOR UPDATE`;
      if (!locked) return null;
      const before = toRow(locked);
      const enabled = changes.enabled ?? before.enabled;
      const interval = changes.intervalSeconds ?? before.intervalSeconds;
      let nextCheckAt = before.nextCheckAt;
      if (!enabled) nextCheckAt = null;
      else if (!before.enabled) nextCheckAt = new Date();
      else if (changes.intervalSeconds !== undefined && before.failures === 0 && before.lastCheckedAt) {
        nextCheckAt = new Date(Math.max(Date.now(), before.lastCheckedAt.getTime() + interval * 1000));
      }
      const row = await tx.subscription.update({ where: { id }, data: { ...changes, nextCheckAt } });
      if (nextCheckAt?.getTime() !== before.nextCheckAt?.getTime()) await this.schedule(id, tx);
      return row;
    });
  }

  /** DELETE: the subscription and its seen entries go; its collections and downloads stay. Returns it as it was, and how many it had seen. */
  async remove(id: string, caller: Caller): Promise<{ row: Row; seenCount: number } | null> {
    return this.prisma.$transaction(async (tx) => {
      const [row] = await tx.subscription.findMany({ where: { id, ...ownedBy(caller) } });
      if (!row) return null;
      const seenCount = (await this.seenCounts([id], tx)).get(id)!;
      await tx.subscription.delete({ where: { id } });
      await tx.$executeRawUnsafe(UNTAKEN_JOBS, id);
      return { row, seenCount };
    });
  }

  /**
   * Takes the subscription for one check, for `leaseSeconds`: a scheduled check (`due`) only when
   * it is still the one due and the subscription is enabled; one asked for by a caller at any time.
   * `busy` when another check holds it (for a scheduled one: while it is still due), `gone` else.
   */
  async claim(id: string, how: { due: Date } | { caller: Caller }, leaseSeconds: number): Promise<Claim> {
    const which =
      'due' in how ? Sql.sql`AND enabled AND next_check_at = ${how.due}` : how.caller.sees === 'all' ? Sql.empty : Sql.sql`AND owner = ${how.caller.owner}`;
    const [claimed] = await this.prisma.$queryRaw<Record<string, unknown>[]>`
      UPDATE subscriptions SET checking_until = now() + ${leaseSeconds} * interval '1s'
       WHERE id = ${id}::uuid ${which} AND (checking_until IS NULL OR checking_until < now())
      RETURNING *`;
    if (claimed) return { kind: 'claimed', row: toRow(claimed) };
    if ('due' in how) {
      const [held] = await this.prisma.$queryRaw<unknown[]>`
        SELECT 1 FROM subscriptions WHERE id = ${id}::uuid AND enabled AND next_check_at = ${how.due} AND checking_until >= now()`;
      return held ? { kind: 'busy' } : { kind: 'gone' };
    }
    return (await this.findFor(id, how.caller)) ? { kind: 'busy' } : { kind: 'gone' };
  }

  /**
   * Extends a running check's hold by `leaseSeconds` while it is still `held` (what its claim or
   * last renewal set): the new hold, or null when it ran out and was taken, or the check ended.
   */
  async renew(id: string, held: Date, leaseSeconds: number): Promise<Date | null> {
    const [row] = await this.prisma.$queryRaw<{ checking_until: Date }[]>`
      UPDATE subscriptions SET checking_until = now() + ${leaseSeconds} * interval '1s'
       WHERE id = ${id}::uuid AND checking_until = ${held}
      RETURNING checking_until`;
    return row?.checking_until ?? null;
  }

  /** A check this process's shutdown cut short: the subscription is let go and checked again at once (by whichever worker runs). */
  async release(id: string): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`
        UPDATE subscriptions SET checking_until = NULL, next_check_at = CASE WHEN enabled THEN now() END, updated_at = now() WHERE id = ${id}::uuid`;
      await this.schedule(id, tx);
    });
  }

  /** A check that failed: recorded, and the next put off (`BACKOFF_SQL`). Null when the subscription is gone. */
  async recordFailure(id: string, error: DownloadError): Promise<Row | null> {
    return this.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRawUnsafe<Record<string, unknown>[]>(
        `UPDATE subscriptions
            SET failures = failures + 1, error_code = $2, error_message = $3, error_retryable = $4,
                last_checked_at = now(), checking_until = NULL, updated_at = now(),
                next_check_at = CASE WHEN enabled THEN now() + ${BACKOFF_SQL} END
          WHERE id = $1::uuid
         RETURNING *`,
        id,
        error.code,
        error.message,
        error.retryable,
      );
      if (!row) return null;
      await this.schedule(id, tx);
      return toRow(row);
    });
  }

  /**
   * A check that listed its source: its entries become seen, the new ones among `children` a
   * collection, and the next check is scheduled, all in one transaction. Null when the
   * subscription is gone (deleted meanwhile): nothing is recorded.
   */
  async recordCheck(id: string, found: CheckRecord): Promise<{ row: Row; collection: Counted | null } | null> {
    return this.prisma.$transaction(async (tx) => {
      const [locked] = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM subscriptions WHERE id = ${id}::uuid FOR UPDATE`;
      if (!locked) return null;
      const fresh = await this.see(id, found.seen, tx);
      const children = [...found.children].flatMap(([key, child]) => (fresh.has(key) ? [child] : []));
      const collection = children.length
        ? await this.deps.collections.createRunning(
            { ...found.collection, title: found.title, extractor: found.extractor, entryLimit: children.length },
            children.map((child, i) => ({ ...child, collectionIndex: i + 1 })),
            tx,
          )
        : null;
      const [updated] = await tx.$queryRaw<Record<string, unknown>[]>`
        UPDATE subscriptions
           SET title = ${found.title}, extractor = ${found.extractor}, failures = 0, error_code = NULL, error_message = NULL, error_retryable = NULL,
               primed_at = COALESCE(primed_at, now()), last_checked_at = now(), checking_until = NULL, updated_at = now(),
               next_check_at = CASE WHEN enabled THEN now() + interval_seconds * interval '1s' END,
               last_collection_id = COALESCE(${collection?.id ?? null}::uuid, last_collection_id)
         WHERE id = ${id}::uuid
        RETURNING *`;
      const row = toRow(updated!);
      await this.schedule(id, tx);
      if (!collection) return { row, collection: null };
      const counted = { row: collection, counts: (await this.deps.collections.counts([collection.id], tx)).get(collection.id)! };
      if (row.callbackUrl) await this.deps.checked(row, (await this.seenCounts([id], tx)).get(id)!, counted, tx);
      return { row, collection: counted };
    });
  }

  /**
   * Subscriptions whose check is overdue with no job to run it (pg-boss lost it, or the process
   * holding the check died and its hold ran out): scheduled again. Returns how many.
   */
  async rescheduleLost(graceSeconds: number): Promise<number> {
    const lost = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT s.id FROM subscriptions s
       WHERE s.enabled AND s.next_check_at < now() - ${graceSeconds} * interval '1s'
         AND (s.checking_until IS NULL OR s.checking_until < now())
         AND NOT EXISTS (
               SELECT 1 FROM ${Sql.raw(JOB_TABLE)} j
                WHERE j.name = ${SUBSCRIPTION_QUEUE} AND j.state::text = ANY(${LIVE_JOB_STATES}) AND j.data->>'subscription_id' = s.id::text)`;
    for (const { id } of lost) {
      await this.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`UPDATE subscriptions SET next_check_at = now(), checking_until = NULL WHERE id = ${id}::uuid AND enabled`;
        await this.schedule(id, tx);
      });
    }
    return lost.length;
  }

  /** Records entries as seen; returns the keys that were not seen before. */
  private async see(id: string, seen: SeenEntry[], tx: Transaction): Promise<Set<string>> {
    if (!seen.length) return new Set();
    const rows = await tx.$queryRaw<{ key: string }[]>`
      INSERT INTO subscription_entries (subscription_id, key, archived)
      SELECT ${id}::uuid, e.key, e.archived FROM unnest(${seen.map((e) => e.key)}::text[], ${seen.map((e) => e.archived)}::boolean[]) AS e(key, archived)
      ON CONFLICT DO NOTHING
      RETURNING key`;
    return new Set(rows.map((row) => row.key));
  }

  private async schedule(id: string, tx: Transaction): Promise<void> {
    await tx.$queryRawUnsafe(SCHEDULE, id);
  }
}

import { fromPrisma, type PgBoss } from 'pg-boss';
import type { Prisma as Generated, Download as Row } from '../../generated/prisma/client.ts';
import type { Prisma } from '../db/prisma.ts';
import { DOWNLOAD_QUEUE, type DownloadJob } from '../queue/index.ts';

export type NewDownload = Generated.DownloadCreateManyInput;

type Waiting = { data: NewDownload; resolve(row: Row): void; reject(error: unknown): void };

const MAX_BATCH = 100;
const MAX_IN_FLIGHT = 2;

/**
 * Group commit for creates: the downloads asked for while earlier transactions are running are
 * written, with their jobs, in the next transaction together. Each row still commits with its own
 * job, but a burst of creates costs a few transactions instead of one each, which is what bounds
 * create throughput (pg-boss's job insert is the expensive half).
 */
export class CreateBatcher {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly deps: { prisma: Prisma; boss: PgBoss }) {}

  add(data: NewDownload): Promise<Row> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ data, resolve, reject });
      if (this.inFlight < MAX_IN_FLIGHT) setImmediate(() => this.drain());
    });
  }

  private drain(): void {
    if (this.inFlight >= MAX_IN_FLIGHT || this.waiting.length === 0) return;
    const batch = this.waiting.splice(0, MAX_BATCH);
    this.inFlight += 1;
    void this.commit(batch).finally(() => {
      this.inFlight -= 1;
      this.drain();
    });
  }

  private async commit(batch: Waiting[]): Promise<void> {
    try {
      const rows = await this.write(batch.map((item) => item.data));
      const byId = new Map(rows.map((row) => [row.id, row]));
      for (const item of batch) item.resolve(byId.get(item.data.id)!);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // One bad row must not fail its neighbours: each is tried again alone.
      await Promise.all(batch.map((item) => this.commit([item])));
    }
  }

  private write(data: NewDownload[]): Promise<Row[]> {
    return this.deps.prisma.$transaction(async (tx) => {
      const rows = await tx.download.createManyAndReturn({ data });
      const jobs = rows.map((row) => ({ data: { download_id: row.id } satisfies DownloadJob }));
      await this.deps.boss.insert(DOWNLOAD_QUEUE, jobs, { db: fromPrisma(tx) });
      return rows;
    });
  }
}

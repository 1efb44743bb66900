import type { Download as Row } from '../../generated/prisma/client.ts';
import type { DownloadRepository, NewDownload } from './repository.ts';

/** `limit`: how many downloads not yet ended its owner may have, this one included; none when undefined. */
type Waiting = { data: NewDownload; limit: number | undefined; resolve(row: Row | null): void; reject(error: unknown): void };

const MAX_BATCH = 100;
const MAX_IN_FLIGHT = 2;

/**
 * Group commit for creates: the downloads asked for while earlier transactions are running are
 * written, with their jobs, in the next transaction together. Each row still commits with its own
 * job, but a burst of creates costs a few transactions instead of one each.
 */
export class CreateBatcher {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly deps: { downloads: DownloadRepository }) {}

  /** The row, or null when its owner already has `limit` downloads that have not ended. */
  add(data: NewDownload, limit: number | undefined): Promise<Row | null> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ data, limit, resolve, reject });
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
      const rows = await this.write(batch);
      const byId = new Map(rows.map((row) => [row.id, row]));
      // A row left out was over its owner's limit.
      for (const item of batch) item.resolve(byId.get(item.data.id) ?? null);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // One bad row must not fail its neighbours: each is tried again alone.
      await Promise.all(batch.map((item) => this.commit([item])));
    }
  }

  private write(batch: Waiting[]): Promise<Row[]> {
    const limits = new Map(batch.flatMap((item) => (item.limit === undefined ? [] : [[item.data.owner, item.limit] as const])));
    return this.deps.downloads.insertMany(
      batch.map((item) => item.data),
      limits,
    );
  }
}

import { createHash, randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { components } from '../../generated/api.ts';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { isUniqueViolation } from '../db/prisma.ts';
import { CreateBatcher } from './create-batch.ts';
import { cleanFileName } from './filename.ts';
import type { DownloadRepository, NewDownload } from './repository.ts';

export type CreateDownloadInput = components['schemas']['CreateDownload'];

export type CreateResult = { kind: 'created' | 'replayed'; row: Row } | { kind: 'key_conflict' };

/** The body as it will be stored, defaults applied, so that `{url}` and `{url, quality:"best"}` agree. */
function requestHash(input: CreateDownloadInput): string {
  const canonical = [input.url, String(input.quality ?? 'best'), input.filename ?? null, input.callback_url ?? null];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Records downloads and queues their jobs, each row in one transaction with its job: there is
 * never a row without its job nor a job without its row; creates that arrive together share a
 * transaction (group commit). A repeat of a request with the same idempotency key (also a
 * concurrent one: the unique index makes the loser wait for the winner) returns the first row.
 */
export class DownloadCreator {
  private readonly batch: CreateBatcher;

  constructor(private readonly deps: { downloads: DownloadRepository; boss: PgBoss }) {
    this.batch = new CreateBatcher(deps);
  }

  /** `linkBase`: the origin and BASE_PATH of the request, which links in its webhook are built on. */
  async create(input: CreateDownloadInput, idempotencyKey: string | undefined, linkBase: string): Promise<CreateResult> {
    const data = newDownload(input, idempotencyKey, linkBase);
    const earlier = idempotencyKey ? await this.replay(idempotencyKey, data.requestHash) : null;
    if (earlier) return earlier;
    try {
      return { kind: 'created', row: await this.batch.add(data) };
    } catch (error) {
      const winner = idempotencyKey && isUniqueViolation(error) ? await this.replay(idempotencyKey, data.requestHash) : null;
      if (winner) return winner;
      throw error;
    }
  }

  /** What an earlier request with this key created, or the conflict when its body differed. */
  private async replay(idempotencyKey: string, requestHash: string): Promise<CreateResult | null> {
    const existing = await this.deps.downloads.findByIdempotencyKey(idempotencyKey);
    if (!existing) return null;
    return existing.requestHash === requestHash ? { kind: 'replayed', row: existing } : { kind: 'key_conflict' };
  }
}

function newDownload(input: CreateDownloadInput, idempotencyKey: string | undefined, linkBase: string): NewDownload {
  return {
    id: randomUUID(),
    url: input.url,
    quality: String(input.quality ?? 'best'),
    // Cleaned now: the database cannot hold some of what a client may send (NUL).
    requestedFilename: input.filename === undefined ? null : cleanFileName(input.filename) || null,
    callbackUrl: input.callback_url ?? null,
    callbackState: input.callback_url === undefined ? null : 'pending',
    linkBase,
    idempotencyKey: idempotencyKey ?? null,
    requestHash: requestHash(input),
  };
}

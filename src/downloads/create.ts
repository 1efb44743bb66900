import { createHash, randomUUID } from 'node:crypto';
import { fromPrisma, type PgBoss } from 'pg-boss';
import type { components } from '../../generated/api.ts';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { isUniqueViolation, type Prisma } from '../db/prisma.ts';
import { DOWNLOAD_QUEUE, type DownloadJob } from '../queue/index.ts';
import { cleanFileName } from './filename.ts';

export type CreateDownloadInput = components['schemas']['CreateDownload'];

export type CreateResult =
  | { kind: 'created' | 'replayed'; row: Row }
  | { kind: 'key_conflict' };

/** The body as it will be stored, defaults applied, so that `{url}` and `{url, quality:"best"}` agree. */
function requestHash(input: CreateDownloadInput): string {
  const canonical = [input.url, String(input.quality ?? 'best'), input.filename ?? null, input.callback_url ?? null];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Records a download and queues its job in one transaction: there is never a row without its job
 * nor a job without its row. With an idempotency key, a repeat of the same request (also a
 * concurrent one: the unique index makes the loser wait for the winner) returns the first row.
 */
export async function createDownload(
  deps: { prisma: Prisma; boss: PgBoss },
  input: CreateDownloadInput,
  idempotencyKey: string | undefined,
): Promise<CreateResult> {
  const hash = requestHash(input);
  const replay = async (): Promise<CreateResult | null> => {
    if (!idempotencyKey) return null;
    const existing = await deps.prisma.download.findUnique({ where: { idempotencyKey } });
    if (!existing) return null;
    return existing.requestHash === hash ? { kind: 'replayed', row: existing } : { kind: 'key_conflict' };
  };

  const earlier = await replay();
  if (earlier) return earlier;
  const id = randomUUID();
  try {
    const row = await deps.prisma.$transaction(async (tx) => {
      const created = await tx.download.create({
        data: {
          id,
          url: input.url,
          quality: String(input.quality ?? 'best'),
          // Cleaned now: the database cannot hold some of what a client may send (NUL).
          requestedFilename: input.filename === undefined ? null : cleanFileName(input.filename) || null,
          callbackUrl: input.callback_url ?? null,
          idempotencyKey: idempotencyKey ?? null,
          requestHash: hash,
        },
      });
      const job: DownloadJob = { download_id: id };
      await deps.boss.send(DOWNLOAD_QUEUE, job, { db: fromPrisma(tx) });
      return created;
    });
    return { kind: 'created', row };
  } catch (error) {
    if (isUniqueViolation(error)) {
      const winner = await replay();
      if (winner) return winner;
    }
    throw error;
  }
}

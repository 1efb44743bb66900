import { createHash, randomUUID } from 'node:crypto';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Caller } from './caller.ts';
import { CreateBatcher } from './create-batch.ts';
import { CreateRequestCheck, type CreateDownloadInput, type CreateRules } from './create-rules.ts';
import { cleanFileName } from './filename.ts';
import type { DownloadRepository, NewDownload } from './repository.ts';

/** `over_limit`: the caller already has as many downloads running or waiting as it may. */
export type CreateResult = { kind: 'created' | 'replayed'; row: Row } | { kind: 'key_conflict' } | { kind: 'over_limit'; limit: number };

/** The body as it will be stored, defaults applied, so that `{url}` and `{url, quality:"best"}` agree. */
export function requestHash(input: CreateDownloadInput): string {
  const canonical = [
    input.url,
    String(input.quality ?? 'best'),
    input.filename ?? null,
    input.callback_url ?? null,
    input.mode ?? 'video',
    audioFormatOf(input),
    [...(input.subtitles ?? [])].sort(),
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Records downloads and queues their jobs, each row in one transaction with its job: there is
 * never a row without its job nor a job without its row; creates that arrive together share a
 * transaction (group commit). A repeat of a request with the same idempotency key by the same
 * owner (also a concurrent one: the unique index makes the loser wait for the winner) returns the
 * first row; under another owner the key is another key. A caller held to its own downloads may
 * have at most `maxActivePerKey` of them not yet ended (0: no limit).
 */
export class DownloadCreator {
  private readonly batch: CreateBatcher;
  private readonly request: CreateRequestCheck;

  constructor(private readonly deps: { downloads: DownloadRepository; maxActivePerKey: number; rules: CreateRules }) {
    this.batch = new CreateBatcher(deps);
    this.request = new CreateRequestCheck(deps.rules);
  }

  /**
   * `linkBase`: the origin and BASE_PATH of the request, which links in its webhook are built on.
   * Throws InvalidDownloadRequest, before anything is stored, for a request that cannot be a download.
   */
  async create(caller: Caller, input: CreateDownloadInput, idempotencyKey: string | undefined, linkBase: string): Promise<CreateResult> {
    this.request.check(input);
    const data = newDownload(caller, input, idempotencyKey, linkBase);
    const replay = () => (idempotencyKey ? this.replay(caller.owner, idempotencyKey, data.requestHash) : null);
    const earlier = await replay();
    if (earlier) return earlier;
    const limit = caller.sees === 'own' && this.deps.maxActivePerKey > 0 ? this.deps.maxActivePerKey : undefined;
    try {
      const row = await this.batch.add(data, limit);
      if (row) return { kind: 'created', row };
      // A repeat sent together with its first request can find the limit reached by that very
      // request: it is a repeat, and gets that download like any other.
      return (await replay()) ?? { kind: 'over_limit', limit: limit! };
    } catch (error) {
      const winner = isUniqueViolation(error) ? await replay() : null;
      if (winner) return winner;
      throw error;
    }
  }

  /** What an earlier request with this key created, or the conflict when its body differed. */
  private async replay(owner: string, idempotencyKey: string, requestHash: string): Promise<CreateResult | null> {
    const existing = await this.deps.downloads.findByIdempotencyKey(owner, idempotencyKey);
    if (!existing) return null;
    return existing.requestHash === requestHash ? { kind: 'replayed', row: existing } : { kind: 'key_conflict' };
  }
}

/** The audio format a download asks for: `best` unless named, and none but with mode `audio`. */
export function audioFormatOf(input: Pick<CreateDownloadInput, 'mode' | 'audio_format'>): string | null {
  return input.mode === 'audio' ? (input.audio_format ?? 'best') : null;
}

function newDownload(caller: Caller, input: CreateDownloadInput, idempotencyKey: string | undefined, linkBase: string): NewDownload {
  return {
    id: randomUUID(),
    owner: caller.owner,
    url: input.url,
    quality: String(input.quality ?? 'best'),
    // Cleaned now: the database cannot hold some of what a client may send (NUL).
    requestedFilename: input.filename === undefined ? null : cleanFileName(input.filename) || null,
    callbackUrl: input.callback_url ?? null,
    mode: input.mode ?? 'video',
    audioFormat: audioFormatOf(input),
    subtitles: input.subtitles ?? [],
    callbackState: input.callback_url === undefined ? null : 'pending',
    linkBase,
    idempotencyKey: idempotencyKey ?? null,
    requestHash: requestHash(input),
  };
}

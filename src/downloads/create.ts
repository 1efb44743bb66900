import { createHash, randomUUID } from 'node:crypto';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { canonicalClip, clipColumns } from '../core/clip.ts';
import type { Caller } from './caller.ts';
import { CreateBatcher } from './create-batch.ts';
import { CreateRequestCheck, type CreateDownloadInput, type CreateRules } from './create-rules.ts';
import { cleanFileName } from './filename.ts';
import { createIdempotently, type CreateResult } from './idempotent.ts';
import type { DownloadRepository, NewDownload } from './repository.ts';

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
    canonicalClip(input.clip),
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Records downloads and queues their jobs, each row in one transaction with its job: there is
 * never a row without its job nor a job without its row; creates that arrive together share a
 * transaction (group commit). Idempotency keys are as idempotent.ts says, under the owner's name
 * (under another owner the key is another key). A caller held to its own downloads may have at
 * most `maxActivePerKey` of them not yet ended (0: no limit).
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
  async create(caller: Caller, input: CreateDownloadInput, idempotencyKey: string | undefined, linkBase: string): Promise<CreateResult<Row>> {
    this.request.check(input);
    const data = newDownload(caller, input, idempotencyKey, linkBase);
    const limit = caller.sees === 'own' && this.deps.maxActivePerKey > 0 ? this.deps.maxActivePerKey : undefined;
    return createIdempotently({
      earlier: idempotencyKey ? () => this.deps.downloads.findByIdempotencyKey(caller.owner, idempotencyKey) : null,
      requestHash: data.requestHash,
      create: () => this.batch.add(data, limit),
      limit,
    });
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
    ...clipColumns(input.clip),
    callbackState: input.callback_url === undefined ? null : 'pending',
    linkBase,
    idempotencyKey: idempotencyKey ?? null,
    requestHash: requestHash(input),
  };
}

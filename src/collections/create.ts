import { createHash, randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { Caller } from '../downloads/caller.ts';
import { CreateRequestCheck, InvalidDownloadRequest, type CreateRules } from '../downloads/create-rules.ts';
import { canonicalClip, clipColumns } from '../core/clip.ts';
import { audioFormatOf } from '../downloads/create.ts';
import { cleanFileName } from '../downloads/filename.ts';
import { createIdempotently, type CreateResult } from '../downloads/idempotent.ts';
import { childrenOf } from './children.ts';
import type { CollectionRepository, CollectionRow, NewCollection } from './repository.ts';

export type CreateCollectionInput = components['schemas']['CreateCollection'];

/** The body as it will be stored, defaults applied, so that equal requests hash alike. */
function requestHash(input: CreateCollectionInput, limit: number): string {
  const canonical = [
    input.url ?? null,
    input.urls ?? null,
    limit,
    input.entries ? [...input.entries].sort((a, b) => a - b) : null,
    input.name ?? null,
    String(input.quality ?? 'best'),
    input.mode ?? 'video',
    audioFormatOf(input),
    [...(input.subtitles ?? [])].sort(),
    input.callback_url ?? null,
    canonicalClip(input.clip),
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Records collections. A batch (`urls`) is made running with its children at once; a collection
 * of `url` is made expanding, with the job that expands it, in the same transaction. Idempotency
 * and the bound on a key's active work are as for downloads (downloads/create.ts), a collection
 * counting as one.
 */
export class CollectionCreator {
  private readonly request: CreateRequestCheck;

  constructor(private readonly deps: { collections: CollectionRepository; maxActivePerKey: number; maxItems: number; rules: CreateRules }) {
    this.request = new CreateRequestCheck(deps.rules);
  }

  /** Throws InvalidDownloadRequest, before anything is stored, for a request that cannot be a collection. */
  async create(caller: Caller, input: CreateCollectionInput, idempotencyKey: string | undefined, linkBase: string): Promise<CreateResult<CollectionRow>> {
    const limit = this.check(input);
    const data = this.newCollection(caller, input, limit, idempotencyKey, linkBase);
    const children = input.urls
      ? childrenOf(
          data,
          unique(input.urls).map((url, i) => ({ index: i + 1, url, refused: null })),
        )
      : null;
    const bound = caller.sees === 'own' && this.deps.maxActivePerKey > 0 ? this.deps.maxActivePerKey : undefined;
    return createIdempotently({
      earlier: idempotencyKey ? () => this.deps.collections.findByIdempotencyKey(caller.owner, idempotencyKey) : null,
      requestHash: data.requestHash,
      create: () => this.deps.collections.create(data, children, bound),
      limit: bound,
    });
  }

  /** The rules beyond the schema; returns the number of entries to take. */
  private check(input: CreateCollectionInput): number {
    if ((input.url === undefined) === (input.urls === undefined)) {
      throw new InvalidDownloadRequest(
        '/body',
        'must have exactly one of url and urls',
        'Give either url (a playlist, channel, feed or page) or urls (a batch), not both and not neither.',
      );
    }
    if (input.url !== undefined) this.request.checkSource(input.url, '/body/url');
    input.urls?.forEach((url, i) => this.request.checkSource(url, `/body/urls/${i}`));
    if (input.urls && (input.entries || input.limit !== undefined)) {
      throw new InvalidDownloadRequest(
        input.entries ? '/body/entries' : '/body/limit',
        'applies to url only',
        'entries and limit choose among what a url holds; a batch (urls) takes every URL it lists.',
      );
    }
    const limit = input.limit ?? this.deps.maxItems;
    if (limit > this.deps.maxItems) {
      throw new InvalidDownloadRequest(
        '/body/limit',
        `must be at most ${this.deps.maxItems}`,
        `This server takes at most ${this.deps.maxItems} entries from one source (MAX_COLLECTION_ITEMS).`,
      );
    }
    const beyond = input.entries?.find((position) => position > limit);
    if (beyond !== undefined) {
      throw new InvalidDownloadRequest(
        '/body/entries',
        `must be at most limit (${limit})`,
        `Entry ${beyond} lies beyond the ${limit} entries taken from the source.`,
      );
    }
    this.request.checkTemplate(input);
    return limit;
  }

  private newCollection(caller: Caller, input: CreateCollectionInput, limit: number, idempotencyKey: string | undefined, linkBase: string): NewCollection {
    return {
      id: randomUUID(),
      owner: caller.owner,
      kind: input.urls ? 'batch' : 'playlist',
      // Cleaned as a file name is: it names the folder the command line saves into.
      name: input.name === undefined ? null : cleanFileName(input.name) || null,
      url: input.url ?? null,
      quality: String(input.quality ?? 'best'),
      mode: input.mode ?? 'video',
      audioFormat: audioFormatOf(input),
      subtitles: input.subtitles ?? [],
      ...clipColumns(input.clip),
      callbackUrl: input.callback_url ?? null,
      entryLimit: limit,
      entryPicks: input.entries ? [...input.entries].sort((a, b) => a - b) : [],
      linkBase,
      idempotencyKey: idempotencyKey ?? null,
      requestHash: requestHash(input, limit),
    };
  }
}

/** Each URL once, in its first place and spelling: two spellings that parse alike (`HTTP://A/./b`, `http://a/b`) are one URL, as a feed's entries are. */
function unique(urls: string[]): string[] {
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const url of urls) {
    const parsed = new URL(url).href;
    if (seen.has(parsed)) continue;
    seen.add(parsed);
    kept.push(url);
  }
  return kept;
}

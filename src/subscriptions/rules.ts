import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.ts';
import type { Caller } from '../downloads/caller.ts';
import { CreateRequestCheck, InvalidDownloadRequest, type CreateRules } from '../downloads/create-rules.ts';
import { audioFormatOf } from '../downloads/create.ts';
import { clipColumns } from '../core/clip.ts';
import { labelOf } from '../core/text.ts';
import { cleanFileName } from '../downloads/filename.ts';
import { parseArchive } from './archive.ts';
import type { NewSubscription, SeenEntry, SubscriptionChanges, SubscriptionRow } from './repository.ts';

// What makes a subscription's create or change valid beyond the contract's schema.

export type CreateSubscriptionInput = components['schemas']['CreateSubscription'];
export type UpdateSubscriptionInput = components['schemas']['UpdateSubscription'];

export type SubscriptionRules = CreateRules & {
  /** SUBSCRIPTION_MIN_INTERVAL_SECONDS. */
  minIntervalSeconds: number;
  /** MAX_COLLECTION_ITEMS: the most a backfill takes, as a collection. */
  maxItems: number;
};

const DEFAULT_INTERVAL_SECONDS = 3600;

/** What makes two URLs one to follow: the URL as parsed, without the fragment, which no request sends. */
function urlKeyOf(url: string): string {
  const parsed = new URL(url);
  parsed.hash = '';
  return parsed.href;
}

/** A name as a collection's is kept: it names the folder the command line saves into. */
function nameOf(name: string | null | undefined): string | null {
  return name ? cleanFileName(name) || null : null;
}

/**
 * A filter as the titles it is matched against are kept (labelOf): one line, without the control
 * characters a title never holds (a NUL, which PostgreSQL refuses, among them); none when nothing is left.
 */
function filterOf(text: string): string {
  const filter = labelOf(text);
  if (filter === null) {
    throw new InvalidDownloadRequest(
      '/body/title_contains',
      'must hold a visible character',
      'title_contains holds only spaces or control characters, which no title has.',
    );
  }
  return filter;
}

export class SubscriptionRequestCheck {
  private readonly request: CreateRequestCheck;

  constructor(private readonly rules: SubscriptionRules) {
    this.request = new CreateRequestCheck(rules);
  }

  /** The subscription a create asks for, and the entries its archive counts as seen; throws InvalidDownloadRequest. */
  newSubscription(caller: Caller, input: CreateSubscriptionInput, linkBase: string): { data: NewSubscription; seen: SeenEntry[] } {
    this.request.checkSource(input.url, '/body/url');
    const intervalSeconds = input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS;
    this.checkInterval(intervalSeconds);
    const titleContains = input.title_contains === undefined ? null : filterOf(input.title_contains);
    const backfill = input.backfill ?? 0;
    if (backfill > this.rules.maxItems) {
      throw new InvalidDownloadRequest(
        '/body/backfill',
        `must be at most ${this.rules.maxItems}`,
        `This server takes at most ${this.rules.maxItems} entries from one source at once (MAX_COLLECTION_ITEMS).`,
      );
    }
    // A null clip (allowed here, as in a PATCH) is none, as an absent one.
    this.request.checkTemplate({ ...input, clip: input.clip ?? undefined });
    const seen = input.archive === undefined ? [] : parseArchive(input.archive);
    return {
      seen,
      data: {
        id: randomUUID(),
        owner: caller.owner,
        url: input.url,
        urlKey: urlKeyOf(input.url),
        name: nameOf(input.name),
        intervalSeconds,
        titleContains,
        backfill,
        quality: String(input.quality ?? 'best'),
        mode: input.mode ?? 'video',
        audioFormat: audioFormatOf(input),
        subtitles: input.subtitles ?? [],
        ...clipColumns(input.clip),
        callbackUrl: input.callback_url ?? null,
        linkBase,
      },
    };
  }

  /** The columns a PATCH changes, its template checked as it will be after the change; throws InvalidDownloadRequest. */
  changes(row: SubscriptionRow, input: UpdateSubscriptionInput): SubscriptionChanges {
    if (input.interval_seconds !== undefined) this.checkInterval(input.interval_seconds);
    const titleContains = input.title_contains == null ? input.title_contains : filterOf(input.title_contains);
    const mode = input.mode ?? (row.mode as NonNullable<UpdateSubscriptionInput['mode']>);
    // A format goes with mode audio only (one given otherwise is refused below); null, or none kept, is the default.
    const audioFormat = mode === 'audio' ? ((input.audio_format === undefined ? row.audioFormat : input.audio_format) ?? 'best') : null;
    const callbackUrl = input.callback_url === undefined ? row.callbackUrl : input.callback_url;
    this.request.checkTemplate({
      mode,
      ...(input.audio_format ? { audio_format: input.audio_format } : {}),
      ...(input.subtitles ? { subtitles: input.subtitles } : {}),
      ...(input.clip ? { clip: input.clip } : {}),
      ...(input.callback_url ? { callback_url: input.callback_url } : {}),
    });
    return {
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.interval_seconds !== undefined ? { intervalSeconds: input.interval_seconds } : {}),
      ...(input.name !== undefined ? { name: nameOf(input.name) } : {}),
      ...(titleContains !== undefined ? { titleContains } : {}),
      ...(input.quality !== undefined ? { quality: String(input.quality) } : {}),
      ...(input.subtitles !== undefined ? { subtitles: input.subtitles } : {}),
      ...(input.clip !== undefined ? clipColumns(input.clip) : {}),
      mode,
      audioFormat,
      callbackUrl,
    };
  }

  private checkInterval(seconds: number): void {
    if (seconds < this.rules.minIntervalSeconds) {
      throw new InvalidDownloadRequest(
        '/body/interval_seconds',
        `must be at least ${this.rules.minIntervalSeconds}`,
        `This server checks a subscription at most every ${this.rules.minIntervalSeconds} seconds (SUBSCRIPTION_MIN_INTERVAL_SECONDS).`,
      );
    }
  }
}

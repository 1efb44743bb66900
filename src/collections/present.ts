import type { components } from '../../generated/api.ts';
import { presentClip } from '../core/clip.ts';
import { parseQuality } from '../core/quality.ts';
import type { CollectionRow, Counts } from './repository.ts';

export type Collection = components['schemas']['Collection'];

type Template = Pick<Collection['options'], 'quality' | 'mode' | 'audio_format' | 'subtitles' | 'clip' | 'callback_url'>;

/** The template of the downloads a collection (or a subscription's checks) makes, as the API shows it. */
export function presentTemplate(
  row: Pick<CollectionRow, 'quality' | 'mode' | 'audioFormat' | 'subtitles' | 'clipStartSeconds' | 'clipEndSeconds' | 'callbackUrl'>,
): Template {
  return {
    quality: parseQuality(row.quality),
    mode: row.mode as Template['mode'],
    audio_format: row.audioFormat as Template['audio_format'],
    subtitles: row.subtitles,
    clip: presentClip(row),
    callback_url: row.callbackUrl,
  };
}

/** The API's view of a collection and the counts of its children. */
export function presentCollection(row: CollectionRow, counts: Counts): Collection {
  return {
    id: row.id,
    name: row.name ?? row.title,
    kind: row.kind as Collection['kind'],
    url: row.url,
    extractor: row.extractor,
    subscription_id: row.subscriptionId,
    status: row.status,
    counts,
    truncated: row.truncated,
    options: {
      ...presentTemplate(row),
      limit: row.entryLimit,
      entries: row.entryPicks.length ? row.entryPicks : null,
    },
    error:
      row.errorCode && row.errorMessage
        ? { code: row.errorCode as components['schemas']['ErrorCode'], message: row.errorMessage, retryable: row.errorRetryable ?? false }
        : null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    expanded_at: row.expandedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
  };
}

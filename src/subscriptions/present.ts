import type { components } from '../../generated/api.ts';
import { presentTemplate } from '../collections/present.ts';
import type { SubscriptionRow } from './repository.ts';

export type Subscription = components['schemas']['Subscription'];

/** The API's view of a subscription, with how many entries it has seen. */
export function presentSubscription(row: SubscriptionRow, seenCount: number): Subscription {
  return {
    id: row.id,
    name: row.name ?? row.title,
    url: row.url,
    extractor: row.extractor,
    enabled: row.enabled,
    status: !row.enabled ? 'paused' : row.failures > 0 ? 'failing' : 'active',
    interval_seconds: row.intervalSeconds,
    title_contains: row.titleContains,
    options: presentTemplate(row),
    last_checked_at: row.lastCheckedAt?.toISOString() ?? null,
    next_check_at: row.nextCheckAt?.toISOString() ?? null,
    last_error:
      row.failures > 0 && row.errorCode && row.errorMessage
        ? { code: row.errorCode as components['schemas']['ErrorCode'], message: row.errorMessage, retryable: row.errorRetryable ?? false }
        : null,
    seen_count: seenCount,
    last_collection_id: row.lastCollectionId,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

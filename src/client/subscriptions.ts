import type { Client } from 'openapi-fetch';
import type { paths } from '../../generated/api.ts';
import type { Json, Ok } from './client.ts';
import { ProblemError } from './problem.ts';
import type { Collection, CreateSubscription, Subscription, SubscriptionListQuery, SubscriptionPage, UpdateSubscription } from './types.ts';

type Signal = { signal?: AbortSignal };

/** What a check found: the collection of what was new (202), or nothing new (200, `{ new: 0 }`). */
export type SubscriptionCheck = { found: true; collection: Collection } | { found: false; collection: null };

/** Subscriptions: a channel, a playlist or a feed checked on a schedule, each check's new entries one collection. */
export type SubscriptionClient = {
  /** Follows a URL; a ProblemError with status 409 carries the existing one's id in `problem.subscription_id`. */
  create(body: CreateSubscription, options?: Signal): Promise<Subscription>;
  list(query?: SubscriptionListQuery, options?: Signal): Promise<SubscriptionPage>;
  get(id: string, options?: Signal): Promise<Subscription>;
  /** Pauses (`enabled: false`), resumes, or changes the interval, the filter or the template. */
  update(id: string, body: UpdateSubscription, options?: Signal): Promise<Subscription>;
  /** Stops following; its downloads and collections stay. Answers the subscription as it was. */
  remove(id: string, options?: Signal): Promise<Subscription>;
  /** Checks now and answers once the check is done. */
  check(id: string, options?: Signal): Promise<SubscriptionCheck>;
  /** The entries it has seen, as a yt-dlp `--download-archive` file's text. */
  archive(id: string, options?: Signal): Promise<string>;
};

export function subscriptionClient(raw: Client<paths, Json>, ok: Ok): SubscriptionClient {
  const path = (id: string) => ({ params: { path: { subscription_id: id } } });
  return {
    create: (body, { signal } = {}) => ok(raw.POST('/subscriptions', { body, signal })),
    list: (query = {}, { signal } = {}) => ok(raw.GET('/subscriptions', { params: { query }, signal })),
    get: (id, { signal } = {}) => ok(raw.GET('/subscriptions/{subscription_id}', { ...path(id), signal })),
    update: (id, body, { signal } = {}) => ok(raw.PATCH('/subscriptions/{subscription_id}', { ...path(id), body, signal })),
    remove: (id, { signal } = {}) => ok(raw.DELETE('/subscriptions/{subscription_id}', { ...path(id), signal })),
    async check(id, { signal } = {}) {
      const { data, error, response } = await raw.POST('/subscriptions/{subscription_id}/check', { ...path(id), signal });
      if (!response.ok || data === undefined) throw await ProblemError.fromResponse(response, error);
      // The status says which of the two bodies came: 202 a collection, 200 `{ new: 0 }`.
      return response.status === 202 ? { found: true, collection: data as Collection } : { found: false, collection: null };
    },
    async archive(id, { signal } = {}) {
      const { data, error, response } = await raw.GET('/subscriptions/{subscription_id}/archive', { ...path(id), parseAs: 'text', signal });
      if (!response.ok || data === undefined) throw await ProblemError.fromResponse(response, error);
      return data;
    },
  };
}

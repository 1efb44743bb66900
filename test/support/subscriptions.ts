import type { ServerResponse } from 'node:http';
import type { components } from '../../generated/api.ts';
import type { TestHttp } from './api.ts';
import type { Collection } from './collections.ts';
import type { FixtureServer, RecordedRequest } from './fixture-server.ts';
import { mediaPath } from './media.ts';
import { waitFor } from './waiting.ts';

// Subscriptions over HTTP, each answer checked against the contract, and a feed for them to
// follow: an RSS document on the fixture server that the test changes while the service reads it.

export type Subscription = components['schemas']['Subscription'];

const json = (headers: Record<string, string>) => ({ headers });

export function createSubscription(http: TestHttp, body: unknown, headers: Record<string, string> = {}) {
  return http.request('POST', '/subscriptions', '/subscriptions', { body, headers });
}

export async function getSubscription(http: TestHttp, id: string, headers: Record<string, string> = {}): Promise<Subscription> {
  const res = await http.request('GET', `/subscriptions/${id}`, '/subscriptions/{subscription_id}', json(headers));
  if (res.status !== 200) throw new Error(`GET /subscriptions/${id} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Subscription;
}

export function patchSubscription(http: TestHttp, id: string, body: unknown, headers: Record<string, string> = {}) {
  return http.request('PATCH', `/subscriptions/${id}`, '/subscriptions/{subscription_id}', { body, headers });
}

export function checkNow(http: TestHttp, id: string, headers: Record<string, string> = {}) {
  return http.request('POST', `/subscriptions/${id}/check`, '/subscriptions/{subscription_id}/check', json(headers));
}

/** Polls the subscription until `done` holds for it; returns it. */
export function waitForSubscription(
  http: TestHttp,
  id: string,
  what: string,
  done: (seen: Subscription) => boolean,
  timeoutMs = 15_000,
): Promise<Subscription> {
  let last: Subscription | undefined;
  return waitFor(
    `subscription ${id}: ${what} (last: ${JSON.stringify(last)})`,
    async () => {
      last = await getSubscription(http, id);
      return done(last) && last;
    },
    timeoutMs,
  );
}

/** Every collection the subscription's checks made, newest first (GET /collections?subscription_id=, which must hold no other). */
export async function collectionsOf(http: TestHttp, id: string): Promise<Collection[]> {
  const res = await http.request('GET', `/collections?subscription_id=${id}&limit=100`, '/collections');
  if (res.status !== 200) throw new Error(`GET /collections answered ${res.status}: ${JSON.stringify(res.body)}`);
  const page = res.body as { items: Collection[]; next_cursor: string | null };
  if (page.next_cursor) throw new Error('more than a hundred collections: collectionsOf would miss some');
  const others = page.items.filter((collection) => collection.subscription_id !== id);
  if (others.length) throw new Error(`GET /collections?subscription_id=${id} listed other collections: ${others.map((other) => other.id).join(', ')}`);
  return page.items;
}

export type FeedItem = { guid: string; title: string; media: string };

/** How the feed answers: its document, an error status, or nothing yet (held open until `release`). */
export type FeedMode = { kind: 'ok' } | { kind: 'status'; status: number } | { kind: 'hold' };

export type Feed = {
  url: string;
  /** The items, newest first, as the next request will get them. */
  items: FeedItem[];
  /** Adds an item at the top (newest); its enclosure is a small clip served at `mediaUrl(media)`, by default `mediaUrl(guid)`. */
  publish(guid: string, title?: string, media?: string): void;
  mediaUrl(media: string): string;
  /** Requests for the feed document so far. */
  readonly requests: RecordedRequest[];
  /** Requests for one item's media so far. */
  mediaRequests(media: string): RecordedRequest[];
  answer(mode: FeedMode): void;
  /** Answers every held request with the document as it is now. */
  release(): void;
  /** Resolves once a request is being held. */
  held(): Promise<void>;
};

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** An RSS feed at `/<name>/feed.xml` whose items each enclose a clip at `/<name>/media/<guid>.mp4`. */
export function feedOn(source: FixtureServer, name: string, guids: string[] = []): Feed {
  const feedPath = `/${name}/feed.xml`;
  const mediaRoute = (media: string) => `/${name}/media/${media}.mp4`;
  const items: FeedItem[] = [];
  let mode: FeedMode = { kind: 'ok' };
  const holding = new Set<ServerResponse>();

  const document = () =>
    '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>' +
    escape(`The ${name} feed`) +
    '</title>' +
    items
      .map(
        (item) =>
          `<item><title>${escape(item.title)}</title><guid isPermaLink="false">${escape(item.guid)}</guid>` +
          `<enclosure url="${source.url(mediaRoute(item.media))}" type="video/mp4" length="1"/></item>`,
      )
      .join('') +
    '</channel></rss>';
  const send = (res: ServerResponse) => res.writeHead(200, { 'Content-Type': 'application/rss+xml; charset=utf-8' }).end(document());

  const url = source.route(feedPath, (_req, res) => {
    if (mode.kind === 'status') return void res.writeHead(mode.status, { 'Content-Type': 'text/plain' }).end('scripted failure\n');
    if (mode.kind === 'hold') {
      holding.add(res);
      res.once('close', () => holding.delete(res));
      return;
    }
    send(res);
  });

  const feed: Feed = {
    url,
    items,
    publish(guid, title = `Episode ${guid}`, media = guid) {
      source.file(mediaRoute(media), mediaPath('clip.mp4'));
      items.unshift({ guid, title, media });
    },
    mediaUrl: (media) => source.url(mediaRoute(media)),
    get requests() {
      return source.requestsFor(feedPath);
    },
    mediaRequests: (media) => source.requestsFor(mediaRoute(media)),
    answer(next) {
      mode = next;
    },
    release() {
      for (const res of holding) send(res);
      holding.clear();
    },
    async held() {
      await waitFor(`a request for ${feedPath} to be held`, () => holding.size > 0);
    },
  };
  // Oldest first, so that the first given ends up last (oldest) in the document.
  for (const guid of guids) feed.publish(guid);
  return feed;
}

import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import type { components } from '../generated/api.ts';
import type { Download } from './support/api.ts';
import { childrenOf, getCollection, waitForCollection, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { query } from './support/queue.ts';
import { mediaPath } from './support/media.ts';
import {
  checkNow,
  collectionsOf,
  createSubscription,
  feedOn,
  getSubscription,
  patchSubscription,
  waitForSubscription,
  type Feed,
  type Subscription,
} from './support/subscriptions.ts';
import { webhookChecker } from './support/webhook-contract.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from './support/webhook-receiver.ts';
import { waitFor } from './support/waiting.ts';

// Subscriptions against the whole service: an RSS feed on 127.0.0.1 that each test changes while
// the service checks it every second or two, whose items enclose small clips. What is new is
// downloaded once, what was there (or in an archive) never, and a failing feed recovers.

type SubscriptionWebhookEvent = components['schemas']['SubscriptionWebhookEvent'];

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const { app, source } = useService({ subscriptionMinIntervalSeconds: 1, webhookSecret: secret, allowPrivateAddresses: true });

/** The subscription's jobs waiting in the queue, not yet taken by a worker. */
async function untakenJobs(id: string): Promise<number> {
  const [row] = await query<{ n: number }>(
    app.config.databaseUrl!,
    "SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'subscription' AND state = 'created' AND data->>'subscription_id' = $1",
    [id],
  );
  return row!.n;
}
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

/** The subscriptions of the test running, deleted after it: those left checking every second would slow the next tests' checks. */
const made: string[] = [];
afterEach(async () => {
  for (const id of made.splice(0)) await app.http.request('DELETE', `/subscriptions/${id}`, '/subscriptions/{subscription_id}');
});

async function subscribe(body: Record<string, unknown>): Promise<Subscription> {
  const res = await createSubscription(app.http, body);
  if (res.status !== 201) throw new Error(`POST /subscriptions answered ${res.status}: ${JSON.stringify(res.body)}`);
  made.push((res.body as Subscription).id);
  return res.body as Subscription;
}

/** The subscription once its first check has read the feed. */
function firstReading(id: string): Promise<Subscription> {
  return waitForSubscription(app.http, id, 'its first reading', (seen) => seen.last_checked_at !== null && seen.status === 'active');
}

/** Resolves once the feed has been asked for `more` more times than now. */
async function checksMore(feed: Feed, more: number, timeoutMs = 10_000): Promise<void> {
  const target = feed.requests.length + more;
  await waitFor(`${more} more requests for ${feed.url}`, () => feed.requests.filter((request) => request.outcome !== undefined).length >= target, timeoutMs);
}

/** The one collection the subscription has made, once there is one and it has completed. */
async function onlyCollection(id: string): Promise<Collection> {
  const [made] = await waitFor(`subscription ${id} to make a collection`, async () => {
    const collections = await collectionsOf(app.http, id);
    return collections.length > 0 && collections;
  });
  return waitForCollection(app.http, made!.id, ['completed'], 30_000);
}

const gets = (feed: Feed, guid: string) => feed.mediaRequests(guid).filter((request) => request.method === 'GET');

describe('new entries', () => {
  test('when a new item appears in the feed, then it is downloaded exactly once within a couple of intervals, and the items there at creation never are', async () => {
    const feed = feedOn(source, 'fresh', ['old-1', 'old-2']);
    const created = await createSubscription(app.http, { url: feed.url, interval_seconds: 1 });
    expect(created.status).toBe(201);
    const subscription = created.body as Subscription;
    made.push(subscription.id);
    expect(created.headers.location).toBe(`/subscriptions/${subscription.id}`);
    expect(subscription).toMatchObject({
      url: feed.url,
      enabled: true,
      status: 'active',
      interval_seconds: 1,
      last_error: null,
    });
    // The first reading is due at once: it may have run by the time the answer is read.
    expect([0, 2]).toContain(subscription.seen_count);
    expect(subscription.next_check_at).not.toBeNull();

    const primed = await firstReading(subscription.id);
    expect(primed).toMatchObject({ seen_count: 2, extractor: 'feed', name: 'The fresh feed', last_collection_id: null });

    const published = Date.now();
    feed.publish('new-1');
    const collection = await onlyCollection(subscription.id);
    expect(Date.parse(collection.created_at) - published).toBeLessThan(4_000);
    expect(collection).toMatchObject({ kind: 'subscription', subscription_id: subscription.id, url: feed.url, counts: { total: 1, completed: 1 } });
    const [child] = await childrenOf(app.http, collection.id);
    expect(child).toMatchObject({ url: feed.mediaUrl('new-1'), status: 'completed', collection: { id: collection.id, index: 1 } });

    // Three more checks find nothing new: still one collection, one fetch of the new item, none of the old.
    await checksMore(feed, 3);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(gets(feed, 'new-1')).toHaveLength(1);
    expect([...feed.mediaRequests('old-1'), ...feed.mediaRequests('old-2')]).toEqual([]);
    expect(await getSubscription(app.http, subscription.id)).toMatchObject({ seen_count: 3, last_collection_id: collection.id, status: 'active' });
  });

  test('when a subscription is made with backfill 2, then exactly the two newest items are downloaded, in the feed order, and the rest never', async () => {
    const feed = feedOn(source, 'backfill', ['b1', 'b2', 'b3', 'b4', 'b5']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, backfill: 2 });
    const collection = await onlyCollection(subscription.id);
    expect(collection.counts).toMatchObject({ total: 2, completed: 2 });
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('b5'), feed.mediaUrl('b4')]);

    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(['b1', 'b2', 'b3'].flatMap((guid) => feed.mediaRequests(guid))).toEqual([]);
    expect(['b4', 'b5'].map((guid) => gets(feed, guid).length)).toEqual([1, 1]);
    expect((await getSubscription(app.http, subscription.id)).seen_count).toBe(5);
  });

  test('when title_contains is set, then an item whose title holds it in another case is downloaded, and one whose title does not never is', async () => {
    const feed = feedOn(source, 'filtered', ['f-old']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, title_contains: 'Live' });
    expect(subscription.title_contains).toBe('Live');
    await firstReading(subscription.id);
    feed.publish('talk', 'A studio talk');
    feed.publish('set', 'The LIVE set');
    const collection = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('set')]);

    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(feed.mediaRequests('talk')).toEqual([]);
    // The one filtered out is seen all the same: a later change of filter does not take it.
    expect((await getSubscription(app.http, subscription.id)).seen_count).toBe(3);
  });

  test('when a guid appears twice in the feed at once, then it is one entry: the first listed (newest) is downloaded, once', async () => {
    const feed = feedOn(source, 'repeated', ['r-old']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1 });
    await firstReading(subscription.id);
    feed.publish('rerun', 'Rerun, first cut', 'rerun-first');
    feed.publish('rerun', 'Rerun, corrected', 'rerun-corrected');
    const collection = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('rerun-corrected')]);
    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(feed.mediaRequests('rerun-first')).toEqual([]);
    expect((await getSubscription(app.http, subscription.id)).seen_count).toBe(2);
  });
});

describe('a clip in the template', () => {
  test("when a subscription has a clip, then its options show it, each check's downloads are cut to it, and a PATCH changes or removes it", async () => {
    const clip = { start_seconds: 1, end_seconds: 2 };
    const feed = feedOn(source, 'clipped', ['c1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, backfill: 1, clip });
    expect(subscription.options.clip).toEqual(clip);
    const collection = await onlyCollection(subscription.id);
    expect(collection.options.clip).toEqual(clip);
    const [child] = await childrenOf(app.http, collection.id);
    expect(child!.clip).toEqual(clip);
    // The feed's 3-second media has one keyframe, at 0: what is kept runs from there to 2 s.
    expect(child!.file!.duration_seconds).toBeGreaterThanOrEqual(2);
    expect(child!.file!.duration_seconds).toBeLessThan(2.2);

    const changed = await patchSubscription(app.http, subscription.id, { clip: { start_seconds: 0.5 } });
    expect((changed.body as Subscription).options.clip).toEqual({ start_seconds: 0.5, end_seconds: null });
    const removed = await patchSubscription(app.http, subscription.id, { clip: null });
    expect((removed.body as Subscription).options.clip).toBeNull();
    const backwards = await patchSubscription(app.http, subscription.id, { clip: { start_seconds: 3, end_seconds: 2 } });
    expect(backwards.status).toBe(400);
    expect((await getSubscription(app.http, subscription.id)).options.clip).toBeNull();
  });

  test('when a subscription is made with a clip that ends before it starts, then 400 naming the clip, and nothing is made; a null clip is none', async () => {
    const feed = feedOn(source, 'backwards-clip');
    const res = await createSubscription(app.http, { url: feed.url, clip: { start_seconds: 5, end_seconds: 4 } });
    expect(res.status).toBe(400);
    expect((res.body as { errors: { field: string }[] }).errors.map((error) => error.field)).toEqual(['/body/clip']);
    expect(feed.requests).toEqual([]);
    expect((await subscribe({ url: feed.url, clip: null })).options.clip).toBeNull();
  });
});

describe('a failing source', () => {
  test('when the feed answers 500, then the subscription is failing with source_http_error; when it answers again, then it is active and what appeared meanwhile is downloaded once', async () => {
    const feed = feedOn(source, 'flaky', ['ok-1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1 });
    await firstReading(subscription.id);

    feed.answer({ kind: 'status', status: 500 });
    const failing = await waitForSubscription(app.http, subscription.id, 'failing', (seen) => seen.status === 'failing');
    expect(failing.last_error).toMatchObject({ code: 'source_http_error' });
    expect(failing.enabled).toBe(true);
    expect(Date.parse(failing.next_check_at!)).toBeGreaterThan(Date.parse(failing.last_checked_at!));
    feed.publish('while-down');

    feed.answer({ kind: 'ok' });
    const recovered = await waitForSubscription(app.http, subscription.id, 'active again', (seen) => seen.status === 'active');
    expect(recovered.last_error).toBeNull();
    const collection = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('while-down')]);
    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(gets(feed, 'while-down')).toHaveLength(1);
  });

  test('when the first reading fails, then the first that succeeds is the first reading: it takes only the backfill of what is there then', async () => {
    const feed = feedOn(source, 'late');
    feed.answer({ kind: 'status', status: 500 });
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, backfill: 1 });
    await waitForSubscription(app.http, subscription.id, 'failing', (seen) => seen.status === 'failing');
    feed.publish('late-1');
    feed.publish('late-2');
    feed.answer({ kind: 'ok' });
    const collection = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('late-2')]);
    expect(await getSubscription(app.http, subscription.id)).toMatchObject({ status: 'active', seen_count: 2 });
    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);
    expect(feed.mediaRequests('late-1')).toEqual([]);
  });

  test('when the feed keeps failing, then each check comes later than the one before: after one, two and four intervals; a check now that succeeds ends it', async () => {
    const feed = feedOn(source, 'down', ['d1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1 });
    await firstReading(subscription.id);
    feed.answer({ kind: 'status', status: 503 });
    const delays: number[] = [];
    let last: string | null = null;
    for (let failures = 1; failures <= 3; failures++) {
      const failed = await waitForSubscription(
        app.http,
        subscription.id,
        `failure ${failures}`,
        (seen) => seen.status === 'failing' && seen.last_checked_at !== last,
      );
      last = failed.last_checked_at;
      delays.push(Date.parse(failed.next_check_at!) - Date.parse(failed.last_checked_at!));
    }
    expect(delays).toEqual([1_000, 2_000, 4_000]);

    feed.answer({ kind: 'ok' });
    const recovered = await checkNow(app.http, subscription.id);
    expect(recovered.body).toEqual({ new: 0 });
    const active = await getSubscription(app.http, subscription.id);
    expect(active).toMatchObject({ status: 'active', last_error: null });
    expect(Date.parse(active.next_check_at!) - Date.parse(active.last_checked_at!)).toBe(1_000);
  });
});

describe('check now', () => {
  test('when a check is asked for, then it is 200 {new: 0} with nothing new, 202 with the collection and its Location when there is, 409 while another runs, and 422 with the code when the source fails', async () => {
    const feed = feedOn(source, 'manual', ['m1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 3600 });
    await firstReading(subscription.id);

    const nothing = await checkNow(app.http, subscription.id);
    expect(nothing.status).toBe(200);
    expect(nothing.body).toEqual({ new: 0 });

    feed.publish('m2');
    const found = await checkNow(app.http, subscription.id);
    expect(found.status).toBe(202);
    const collection = found.body as Collection;
    expect(collection).toMatchObject({ kind: 'subscription', subscription_id: subscription.id, status: 'running', counts: { total: 1 } });
    expect(found.headers.location).toBe(`/collections/${collection.id}`);
    await waitForCollection(app.http, collection.id, ['completed']);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('m2')]);
    expect((await getSubscription(app.http, subscription.id)).last_collection_id).toBe(collection.id);

    // The feed holds its answer: the first check runs until it is released, the second finds it running.
    feed.answer({ kind: 'hold' });
    const first = checkNow(app.http, subscription.id);
    await feed.held();
    const second = await checkNow(app.http, subscription.id);
    expect(second.status).toBe(409);
    expect(second.headers['content-type']).toMatch(/^application\/problem\+json/);
    feed.answer({ kind: 'ok' });
    feed.release();
    expect((await first).status).toBe(200);
    expect((await checkNow(app.http, subscription.id)).status).toBe(200);

    feed.answer({ kind: 'status', status: 500 });
    const failed = await checkNow(app.http, subscription.id);
    expect(failed.status).toBe(422);
    expect(failed.body).toMatchObject({ status: 422, code: 'source_http_error' });
    expect(await getSubscription(app.http, subscription.id)).toMatchObject({ status: 'failing', last_error: { code: 'source_http_error' } });
    feed.answer({ kind: 'ok' });
    expect((await checkNow(app.http, subscription.id)).body).toEqual({ new: 0 });
    expect(await getSubscription(app.http, subscription.id)).toMatchObject({ status: 'active', last_error: null });
    expect(await collectionsOf(app.http, subscription.id)).toHaveLength(1);

    // Paused, it is still checked when asked, and stays paused.
    await patchSubscription(app.http, subscription.id, { enabled: false });
    feed.publish('m3');
    const whilePaused = await checkNow(app.http, subscription.id);
    expect(whilePaused.status).toBe(202);
    expect(await getSubscription(app.http, subscription.id)).toMatchObject({
      status: 'paused',
      next_check_at: null,
      last_collection_id: (whilePaused.body as Collection).id,
    });
  });

  test('when the client asking for a check goes away, then the check is let go and the subscription checked again at once, not held for its lease', async () => {
    const feed = feedOn(source, 'hung-up', ['h1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 3600 });
    const before = await firstReading(subscription.id);
    feed.answer({ kind: 'hold' });
    const client = new AbortController();
    const gone = fetch(`${app.service.url}/subscriptions/${subscription.id}/check`, { method: 'POST', signal: client.signal });
    await feed.held();
    feed.answer({ kind: 'ok' });
    client.abort();
    await expect(gone).rejects.toThrow();
    await waitForSubscription(
      app.http,
      subscription.id,
      'checked again',
      (seen) => seen.last_checked_at !== before.last_checked_at && seen.status === 'active',
    );
    expect(feed.requests.filter((request) => request.outcome === 'aborted')).toHaveLength(1);
  });
});

describe('the archive', () => {
  test('when a subscription is made with an archive, then its entries are never downloaded even with backfill, and its exported archive makes another count the same entries as seen', async () => {
    const feed = feedOn(source, 'archived', ['a1', 'a2', 'a3', 'a4']);
    const imported = ['feed a4', 'feed a3', 'youtube dQw4w9WgXcQ'];
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, backfill: 3, archive: `# from yt-dlp\r\n${imported.join('\r\n')}\r\n\r\n` });
    expect([3, 5]).toContain(subscription.seen_count);
    // The backfill's three newest are a4, a3 and a2; the first two are in the archive.
    const collection = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([feed.mediaUrl('a2')]);
    expect([...feed.mediaRequests('a4'), ...feed.mediaRequests('a3'), ...feed.mediaRequests('a1')]).toEqual([]);

    const exported = await app.http.request('GET', `/subscriptions/${subscription.id}/archive`, '/subscriptions/{subscription_id}/archive');
    expect(exported.status).toBe(200);
    expect(exported.headers['content-type']).toMatch(/^text\/plain/);
    const text = exported.text;
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.split('\n').slice(0, -1);
    // What was imported first (it was seen first), then what the first reading saw.
    expect(new Set(lines.slice(0, 3))).toEqual(new Set(imported));
    expect(new Set(lines.slice(3))).toEqual(new Set(['feed a2', 'feed a1']));
    for (const line of lines) expect(line).toMatch(/^[a-z0-9]+ [^\s]+$/);
    expect((await getSubscription(app.http, subscription.id)).seen_count).toBe(5);

    // The same feed under another URL (a query the fixture ignores), given the exported text.
    const copy = await subscribe({ url: `${feed.url}?copy=1`, interval_seconds: 1, backfill: 10, archive: text });
    expect(copy.seen_count).toBe(5);
    await firstReading(copy.id);
    await checksMore(feed, 2);
    expect(await collectionsOf(app.http, copy.id)).toEqual([]);
    expect((await getSubscription(app.http, copy.id)).seen_count).toBe(5);
    const again = await app.http.request('GET', `/subscriptions/${copy.id}/archive`, '/subscriptions/{subscription_id}/archive');
    expect(new Set(again.text.split('\n').slice(0, -1))).toEqual(new Set(lines));
    expect(gets(feed, 'a2')).toHaveLength(1);
  });
});

describe('entries without ids', () => {
  test('when the source is a page of media elements, then its entries are seen by their URLs, and none is in the archive', async () => {
    const clips = ['one', 'two'].map((name) => source.file(`/page/${name}.mp4`, mediaPath('clip.mp4')));
    const page = source.content(
      '/page/index.html',
      `<html><head><title>Clips</title></head><body>${clips.map((clip) => `<video src="${clip}"></video>`).join('')}</body></html>`,
    );
    const subscription = await subscribe({ url: page, interval_seconds: 3600 });
    const primed = await firstReading(subscription.id);
    expect(primed).toMatchObject({ extractor: 'page', seen_count: 2 });
    const archive = await app.http.request('GET', `/subscriptions/${subscription.id}/archive`, '/subscriptions/{subscription_id}/archive');
    expect(archive.status).toBe(200);
    expect(archive.text).toBe('');
    expect((await checkNow(app.http, subscription.id)).body).toEqual({ new: 0 });
    expect(source.requestsFor('/page/one.mp4')).toEqual([]);
  });
});

describe('change and delete', () => {
  test('when a subscription is paused, then no check reaches the feed; when resumed, then it is checked at once; its interval, name and filter change', async () => {
    const feed = feedOn(source, 'paused', ['p0']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1 });
    await firstReading(subscription.id);

    // Paused while a check holds the feed: that check ends, and none follows.
    feed.answer({ kind: 'hold' });
    await feed.held();
    // The scheduled check holds the subscription: one asked for now finds it running.
    expect((await checkNow(app.http, subscription.id)).status).toBe(409);
    const paused = await patchSubscription(app.http, subscription.id, { enabled: false });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ enabled: false, status: 'paused', next_check_at: null });
    feed.answer({ kind: 'ok' });
    feed.release();
    const settled = await waitForSubscription(
      app.http,
      subscription.id,
      'the held check to end',
      (seen) => Date.parse(seen.last_checked_at!) > Date.parse(paused.body.updated_at),
    );
    expect(settled).toMatchObject({ status: 'paused', next_check_at: null });
    const asked = feed.requests.length;
    await sleep(4_000);
    expect(feed.requests.length).toBe(asked);
    expect((await getSubscription(app.http, subscription.id)).last_checked_at).toBe(settled.last_checked_at);

    // Resumed with a long interval: one check at once, and then none for a while.
    const resumed = await patchSubscription(app.http, subscription.id, { enabled: true, interval_seconds: 60, name: 'Renamed', title_contains: 'special' });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ enabled: true, status: 'active', interval_seconds: 60, name: 'Renamed', title_contains: 'special' });
    expect(Date.parse(resumed.body.next_check_at)).toBeLessThanOrEqual(Date.now());
    // Counted from the pause: the check may be over before the answer to the PATCH is read.
    await waitFor('the check on resume to reach the feed', () => feed.requests.length > asked);
    const checked = await waitForSubscription(
      app.http,
      subscription.id,
      'its check on resume',
      (seen) => Date.parse(seen.last_checked_at!) > Date.parse(settled.last_checked_at!),
    );
    expect(Date.parse(checked.next_check_at!) - Date.parse(checked.last_checked_at!)).toBe(60_000);
    const afterResume = feed.requests.length;
    await sleep(2_500);
    expect(feed.requests.length).toBe(afterResume);

    // A shorter interval counts from the last check, which is long past: checked again soon, with the new filter.
    feed.publish('plain', 'A plain episode');
    feed.publish('special', 'A SPECIAL episode');
    const shorter = await patchSubscription(app.http, subscription.id, { interval_seconds: 1, title_contains: null, name: null });
    expect(shorter.body).toMatchObject({ interval_seconds: 1, title_contains: null, name: 'The paused feed' });
    const all = await onlyCollection(subscription.id);
    expect((await childrenOf(app.http, all.id)).map((child) => child.url)).toEqual([feed.mediaUrl('special'), feed.mediaUrl('plain')]);
  });

  test('when the interval changes twice before a check is due, then one job waits for the next check, and none once it is deleted', async () => {
    const feed = feedOn(source, 'rescheduled', ['r1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 600 });
    await waitForSubscription(app.http, subscription.id, 'its first reading', (seen) => seen.last_checked_at !== null);
    expect(await untakenJobs(subscription.id)).toBe(1);
    for (const interval of [300, 450]) {
      expect((await patchSubscription(app.http, subscription.id, { interval_seconds: interval })).status).toBe(200);
    }
    expect(await untakenJobs(subscription.id)).toBe(1);
    expect((await app.http.request('DELETE', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}')).status).toBe(200);
    expect(await untakenJobs(subscription.id)).toBe(0);
  });

  test('when a subscription is deleted, then it answers 200 and is 404 after, its downloads stay readable, and no further request reaches the feed', async () => {
    const feed = feedOn(source, 'deleted', ['d1', 'd2']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, backfill: 1 });
    const collection = await onlyCollection(subscription.id);
    const [child] = await childrenOf(app.http, collection.id);

    // Deleted while a check holds the feed: that check records nothing, and none follows.
    feed.publish('d3');
    feed.answer({ kind: 'hold' });
    await feed.held();
    const deleted = await app.http.request('DELETE', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}');
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: subscription.id, enabled: false, status: 'paused', next_check_at: null, seen_count: 2 });
    feed.answer({ kind: 'ok' });
    feed.release();
    await waitFor('the held request to end', () => feed.requests.every((request) => request.outcome !== undefined));
    const asked = feed.requests.length;

    const paths = ['/subscriptions/{subscription_id}', '/subscriptions/{subscription_id}/archive'];
    for (const template of paths) {
      expect((await app.http.request('GET', template.replace('{subscription_id}', subscription.id), template)).status).toBe(404);
    }
    expect((await patchSubscription(app.http, subscription.id, { enabled: true })).status).toBe(404);
    expect((await checkNow(app.http, subscription.id)).status).toBe(404);
    expect((await app.http.request('DELETE', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}')).status).toBe(404);

    expect(await getCollection(app.http, collection.id)).toMatchObject({ subscription_id: subscription.id, counts: { completed: 1 } });
    const kept = (await app.http.getDownload(child!.id)).body as Download;
    expect(kept.status).toBe('completed');
    expect((await app.http.getFile(kept.download_url!)).status).toBe(200);
    await sleep(3_000);
    expect(feed.requests.length).toBe(asked);
    expect(feed.mediaRequests('d3')).toEqual([]);
  });
});

describe('webhooks', () => {
  function verified(delivery: ReceivedWebhook): { type: string } {
    const pick = (name: string) => String(delivery.headers[name] ?? '');
    return new Webhook(secret).verify(delivery.body, {
      'webhook-id': pick('webhook-id'),
      'webhook-timestamp': pick('webhook-timestamp'),
      'webhook-signature': pick('webhook-signature'),
    }) as { type: string };
  }

  test('when a check with a callback_url finds something, then one signed subscription.checked arrives holding the subscription and the collection, as the contract says', async () => {
    const checkDelivery = webhookChecker('subscriptionChecked');
    const callback = receiver.hook('/subscription');
    const feed = feedOn(source, 'hooked', ['h1']);
    const subscription = await subscribe({ url: feed.url, interval_seconds: 1, callback_url: callback });
    expect(subscription.options.callback_url).toBe(callback);
    await firstReading(subscription.id);
    feed.publish('h2');
    const collection = await onlyCollection(subscription.id);

    const checkedEvents = () => receiver.deliveriesTo('/subscription').filter((delivery) => verified(delivery).type === 'subscription.checked');
    const [delivery] = await waitFor('a subscription.checked delivery', () => checkedEvents().length > 0 && checkedEvents());
    checkDelivery(delivery!);
    const event = verified(delivery!) as SubscriptionWebhookEvent;
    expect(event.data.subscription).toMatchObject({ id: subscription.id, status: 'active', seen_count: 2, last_collection_id: collection.id });
    expect(event.data.collection).toMatchObject({ id: collection.id, kind: 'subscription', subscription_id: subscription.id, counts: { total: 1 } });
    // The collection's own and its download's webhooks come too; one subscription.checked only, even after more checks.
    await receiver.waitForDeliveries('/subscription', 3);
    await checksMore(feed, 2);
    expect(checkedEvents()).toHaveLength(1);
  });
});

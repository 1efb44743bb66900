import { createClient, ProblemError, type VideoDownloadClient } from '../src/client/index.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { growingFeed, waitForSubscription } from './support/subscription-clients.ts';

// The SDK's subscriptions as a consumer uses them, against the real service following a real feed
// on 127.0.0.1: what each call returns is typed from openapi.yaml and is what the service sent.

const { app, source } = useService({ subscriptionMinIntervalSeconds: 1 });
let vds: VideoDownloadClient;

beforeAll(() => {
  vds = createClient({ baseUrl: app.service.url });
});

test('when a feed is followed with a backfill of 1, then its newest entry is downloaded, the rest is seen, a check finds nothing new, and one after a new item makes a collection of it', async () => {
  const feed = growingFeed(source, '/sdk-sub/feed.xml', 'SDK show');
  feed.publish('sdk-1', 'sdk-2', 'sdk-3');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600, backfill: 1 });
  expect(created).toMatchObject({ url: feed.url, enabled: true, status: 'active', interval_seconds: 3_600, title_contains: null });

  const read = await waitForSubscription(vds, created.id, (subscription) => subscription.last_collection_id !== null);
  expect(read).toMatchObject({ name: 'SDK show', seen_count: 3, last_error: null });
  const backfilled = await vds.collections.wait(read.last_collection_id!);
  expect(backfilled).toMatchObject({ kind: 'subscription', subscription_id: created.id, counts: { total: 1, completed: 1 } });
  const [newest] = await vds.collections.children(backfilled.id);
  expect(newest!.url).toBe(source.url('/sdk-sub/feed.xml-media/sdk-3.mp4'));
  expect(newest!.file?.sha256).toBe(await sha256File(mediaPath('clip.mp4')));

  // Nothing new: the result says so, and its type has no collection to read.
  const nothing = await vds.subscriptions.check(created.id);
  expect(nothing).toEqual({ found: false, collection: null });

  feed.publish('sdk-4');
  const found = await vds.subscriptions.check(created.id);
  expect(found.found).toBe(true);
  if (!found.found) return;
  expect(found.collection).toMatchObject({ kind: 'subscription', subscription_id: created.id, counts: { total: 1 } });
  const done = await vds.collections.wait(found.collection.id);
  expect(done.counts.completed).toBe(1);
  expect((await vds.collections.children(done.id)).map((child) => child.url)).toEqual([source.url('/sdk-sub/feed.xml-media/sdk-4.mp4')]);

  const now = await vds.subscriptions.get(created.id);
  expect(now).toMatchObject({ seen_count: 4, last_collection_id: found.collection.id });
  expect((await vds.subscriptions.list({ limit: 100 })).items).toContainEqual(now);
  // The archive is yt-dlp's text: one `<extractor> <id>` a line, for each entry seen.
  const archive = await vds.subscriptions.archive(created.id);
  expect(typeof archive).toBe('string');
  expect(
    archive
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[1])
      .sort(),
  ).toEqual(['sdk-1', 'sdk-2', 'sdk-3', 'sdk-4']);
});

test('when the interval passes, then a newly published entry is downloaded without anyone asking', async () => {
  const feed = growingFeed(source, '/sdk-sub/scheduled.xml', 'Scheduled');
  feed.publish('sched-1');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 1 });
  await waitForSubscription(vds, created.id, (subscription) => subscription.seen_count === 1);
  feed.publish('sched-2');
  const later = await waitForSubscription(vds, created.id, (subscription) => subscription.last_collection_id !== null, 30_000);
  expect(later.seen_count).toBe(2);
  const children = await vds.collections.children(later.last_collection_id!);
  expect(children.map((child) => child.url)).toEqual([source.url('/sdk-sub/scheduled.xml-media/sched-2.mp4')]);
  await vds.subscriptions.remove(created.id);
});

test('when the same URL is followed twice, then the second create throws a 409 naming the first subscription', async () => {
  const feed = growingFeed(source, '/sdk-sub/twice.xml', 'Twice');
  const first = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600 });
  const again = (await vds.subscriptions.create({ url: feed.url }).catch((error: unknown) => error)) as ProblemError;
  expect(again).toBeInstanceOf(ProblemError);
  expect(again.status).toBe(409);
  expect(again.problem.subscription_id).toBe(first.id);
});

test('when a subscription is paused, resumed and changed, then each answer is the subscription as it now is', async () => {
  const feed = growingFeed(source, '/sdk-sub/paused.xml', 'Paused');
  feed.publish('p-1');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600, name: 'Mine' });
  await waitForSubscription(vds, created.id);
  const paused = await vds.subscriptions.update(created.id, { enabled: false });
  expect(paused).toMatchObject({ enabled: false, status: 'paused', next_check_at: null, name: 'Mine' });
  expect(await vds.subscriptions.get(created.id)).toEqual(paused);
  const changed = await vds.subscriptions.update(created.id, { enabled: true, interval_seconds: 7_200, title_contains: 'interview', mode: 'audio' });
  expect(changed).toMatchObject({ enabled: true, interval_seconds: 7_200, title_contains: 'interview', options: { mode: 'audio' } });
  expect(changed.status).not.toBe('paused');
  const cleared = await vds.subscriptions.update(created.id, { title_contains: null, name: null });
  expect(cleared).toMatchObject({ title_contains: null, interval_seconds: 7_200 });
});

test('when a subscription is given a yt-dlp archive, then its entries count as seen and only the others are backfilled', async () => {
  const feed = growingFeed(source, '/sdk-sub/archived.xml', 'Archived');
  feed.publish('arch-1', 'arch-2');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600, backfill: 2, archive: '# from yt-dlp\n\nfeed arch-2\n' });
  const read = await waitForSubscription(vds, created.id, (subscription) => subscription.last_collection_id !== null);
  const children = await vds.collections.children(read.last_collection_id!);
  expect(children.map((child) => child.url)).toEqual([source.url('/sdk-sub/archived.xml-media/arch-1.mp4')]);
  expect((await vds.subscriptions.archive(created.id)).split('\n').filter(Boolean).sort()).toEqual(['feed arch-1', 'feed arch-2']);
});

test('when the source fails a check, then check throws a 422 with its code and the subscription is failing with that error, until a check succeeds', async () => {
  const feed = growingFeed(source, '/sdk-sub/failing.xml', 'Failing');
  feed.publish('f-1');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600 });
  await waitForSubscription(vds, created.id);
  feed.fail(500);
  const failed = (await vds.subscriptions.check(created.id).catch((error: unknown) => error)) as ProblemError;
  expect(failed).toBeInstanceOf(ProblemError);
  expect(failed.status).toBe(422);
  expect(failed.problem.code).toBe('source_http_error');
  const failing = await vds.subscriptions.get(created.id);
  expect(failing).toMatchObject({ status: 'failing', last_error: { code: 'source_http_error' } });

  feed.publish('f-2');
  expect((await vds.subscriptions.check(created.id)).found).toBe(true);
  expect(await vds.subscriptions.get(created.id)).toMatchObject({ status: 'active', last_error: null });
});

test('when a subscription is removed, then it answers as it was, is gone after, and the collection it made stays', async () => {
  const feed = growingFeed(source, '/sdk-sub/removed.xml', 'Removed');
  feed.publish('r-1');
  const created = await vds.subscriptions.create({ url: feed.url, interval_seconds: 3_600, backfill: 1 });
  const read = await waitForSubscription(vds, created.id, (subscription) => subscription.last_collection_id !== null);
  const removed = await vds.subscriptions.remove(created.id);
  expect(removed).toMatchObject({ id: created.id, url: feed.url });
  await expect(vds.subscriptions.get(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(vds.subscriptions.check(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(vds.subscriptions.archive(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(vds.subscriptions.remove(created.id)).rejects.toMatchObject({ status: 404 });
  expect((await vds.collections.get(read.last_collection_id!)).subscription_id).toBe(created.id);
});

test('when a create is not what the contract takes, then the SDK throws the 400 naming the field', async () => {
  const bad = (await vds.subscriptions.create({ url: source.url('/x.xml'), interval_seconds: 0 }).catch((error: unknown) => error)) as ProblemError;
  expect(bad).toBeInstanceOf(ProblemError);
  expect(bad.status).toBe(400);
  expect(bad.problem.errors?.map((error) => error.field)).toContain('/body/interval_seconds');
});

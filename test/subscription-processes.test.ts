import type { components } from '../generated/api.ts';
import { CHECK_LEASE_SECONDS } from '../src/subscriptions/check.ts';
import type { Download, TestHttp } from './support/api.ts';
import { childrenOf, type Collection } from './support/collections.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { useProcessSetting } from './support/process-setting.ts';
import type { ServiceProcess } from './support/service-process.ts';
import { waitFor, within } from './support/waiting.ts';

// A subscription downloads each new entry of its source exactly once, within one interval of its
// appearing, whatever happens to the service processes: a restart between checks, two processes
// on one database, a process killed in the middle of a check. The feed is served here and grows
// while the services run; each item's enclosure is real media at a path of its own.

type Subscription = components['schemas']['Subscription'];

const INTERVAL_SECONDS = 2;
/** A due check waits for a worker's next poll (1 s), then lists the feed and records what it found. */
const CHECK_SLACK_MS = 2_000;

const setting = useProcessSetting({ SUBSCRIPTION_MIN_INTERVAL_SECONDS: '1' });
const { source } = setting;

type Item = { n: number; url: string; addedAt: number };

/** An RSS feed at `path` that the test grows item by item; `hold()` keeps its answers waiting until `release()`. */
function growingFeed(path: string) {
  const items: Item[] = [];
  let held: { promise: Promise<void>; release(): void } | undefined;
  const url = source.route(`${path}/feed.rss`, async (_req, res) => {
    if (held) await held.promise;
    // Newest first, as a source lists them.
    const entries = [...items]
      .reverse()
      .map((item) => `<item><title>Episode ${item.n}</title><guid>${path}-${item.n}</guid><enclosure url="${item.url}" type="video/mp4" length="1"/></item>`);
    res.writeHead(200, { 'Content-Type': 'application/rss+xml; charset=utf-8' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Feed ${path}</title>${entries.join('')}</channel></rss>`);
  });
  return {
    url,
    items,
    /** When the feed was asked for, each time. */
    readings: () => source.requestsFor(`${path}/feed.rss`).map((request) => request.receivedAt),
    add(): Item {
      const n = items.length + 1;
      const item = { n, url: source.file(`${path}/media/${n}.mp4`, mediaPath('clip.mp4')), addedAt: Date.now() };
      items.push(item);
      return item;
    },
    hold() {
      let release!: () => void;
      held = { promise: new Promise<void>((resolve) => (release = resolve)), release };
    },
    release() {
      held?.release();
      held = undefined;
    },
  };
}

type Feed = ReturnType<typeof growingFeed>;

async function subscribe(http: TestHttp, feed: Feed): Promise<Subscription> {
  const res = await http.request('POST', '/subscriptions', '/subscriptions', { body: { url: feed.url, interval_seconds: INTERVAL_SECONDS } });
  expect(res.status).toBe(201);
  return res.body as Subscription;
}

async function getSubscription(http: TestHttp, id: string): Promise<Subscription> {
  const res = await http.request('GET', `/subscriptions/${id}`, '/subscriptions/{subscription_id}');
  expect(res.status).toBe(200);
  return res.body as Subscription;
}

/** The first reading done: what the feed held then counts as seen. */
function primed(http: TestHttp, id: string): Promise<Subscription> {
  return waitFor(`subscription ${id}'s first reading`, async () => {
    const seen = await getSubscription(http, id);
    return seen.last_checked_at !== null && seen;
  });
}

/** Every download the subscription's collections made, paging through GET /collections. */
async function downloadsOf(http: TestHttp, id: string): Promise<Download[]> {
  const collections: Collection[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `limit=100${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await http.request('GET', `/collections?${query}`, '/collections');
    expect(res.status).toBe(200);
    const page = res.body as { items: Collection[]; next_cursor: string | null };
    collections.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  const ours = collections.filter((collection) => collection.subscription_id === id);
  expect(ours.every((collection) => collection.kind === 'subscription')).toBe(true);
  return (await Promise.all(ours.map((collection) => childrenOf(http, collection.id)))).flat();
}

/** Waits until the item has its download; returns that one, checking it is the only one. */
async function downloadedOnce(http: TestHttp, id: string, item: Item, timeoutMs = 15_000): Promise<Download> {
  const child = await waitFor(
    `item ${item.n} to be downloaded`,
    async () => (await downloadsOf(http, id)).find((download) => download.url === item.url),
    timeoutMs,
  );
  expect((await downloadsOf(http, id)).filter((download) => download.url === item.url)).toHaveLength(1);
  return child;
}

/** Every item has exactly one download across the subscription's collections, completed with the media, and fetched once. */
async function expectEachOnce(http: TestHttp, id: string, items: Item[]): Promise<void> {
  const expected = await sha256File(mediaPath('clip.mp4'));
  const done = await waitFor(
    'every item to be downloaded',
    async () => {
      const downloads = await downloadsOf(http, id);
      return downloads.length >= items.length && downloads.every((download) => download.status === 'completed') && downloads;
    },
    30_000,
  );
  expect(done.map((download) => download.url).sort()).toEqual(items.map((item) => item.url).sort());
  expect(done.map((download) => download.file?.sha256)).toEqual(items.map(() => expected));
  for (const item of items) expect(source.requestsFor(new URL(item.url).pathname)).toHaveLength(1);
}

/** How long after `since` the download was made: within one interval of the item's appearing, as the issue asks. */
function lateness(child: Download, since: number): number {
  return Date.parse(child.created_at) - since;
}

/** The gaps between the feed's readings: a check is never run twice for one due time, so none is much shorter than the interval. */
function gaps(readings: number[]): number[] {
  return readings.slice(1).map((at, i) => at - readings[i]!);
}

const running: ServiceProcess[] = [];
async function start(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const started = await setting.start(env);
  running.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((one) => one.kill('SIGKILL')));
});

test('when the service restarts between checks, then the entry that appeared while it was down is downloaded once after it starts, and the schedule goes on', async () => {
  const feed = growingFeed('/restart');
  feed.add();
  const first = await start();
  const { id } = await subscribe(first.http, feed);
  await primed(first.http, id);

  await first.kill('SIGTERM');
  const whileDown = feed.add();
  // Past the check that was due meanwhile.
  await new Promise((resolve) => setTimeout(resolve, INTERVAL_SECONDS * 1000 + 500));
  const restarting = Date.now();
  const second = await start();
  const up = Date.now();
  const caughtUp = await downloadedOnce(second.http, id, whileDown);
  // Made by the new process (its worker may check before its API answers), within one interval of
  // its having started: how long the start itself takes is the machine's, not the schedule's.
  expect(lateness(caughtUp, restarting)).toBeGreaterThanOrEqual(0);
  expect(lateness(caughtUp, up)).toBeLessThanOrEqual(INTERVAL_SECONDS * 1000 + CHECK_SLACK_MS);

  const later = feed.add();
  const next = await downloadedOnce(second.http, id, later);
  expect(lateness(next, later.addedAt)).toBeLessThanOrEqual(INTERVAL_SECONDS * 1000 + CHECK_SLACK_MS);

  // Only what appeared after the first reading, each once; and the checks go on after that.
  await expectEachOnce(second.http, id, [whileDown, later]);
  const readings = feed.readings().length;
  await waitFor('two more checks', () => feed.readings().length >= readings + 2, INTERVAL_SECONDS * 3000 + CHECK_SLACK_MS);
  const after = await getSubscription(second.http, id);
  expect(after).toMatchObject({ status: 'active', enabled: true, last_error: null, seen_count: 3 });
  expect(Date.parse(after.next_check_at!)).toBeGreaterThan(Date.parse(after.last_checked_at!));
  // Only the first reading's entry came before: none of it downloaded (backfill 0).
  expect(await downloadsOf(second.http, id)).toHaveLength(2);
}, 90_000);

test('when two processes run on one database, then each new entry is downloaded exactly once and each check runs on one of them', async () => {
  const feed = growingFeed('/two');
  const one = await start();
  const two = await start();
  const { id } = await subscribe(one.http, feed);
  // Nothing in the feed yet: its first reading is one of nothing, and what comes later is new.
  expect(await primed(two.http, id)).toMatchObject({ status: 'active', last_error: null, seen_count: 0 });
  const from = Date.now();

  const items: Item[] = [];
  const late: number[] = [];
  let pending: Item[] = [];
  for (let i = 0; i < 6; i++) {
    const item = feed.add();
    items.push(item);
    pending.push(item);
    // Every third item comes in the same interval as the one after it; the others one at a time.
    if (i % 3 === 0) continue;
    for (const waiting of pending) late.push(lateness(await downloadedOnce(i % 2 ? two.http : one.http, id, waiting), waiting.addedAt));
    pending = [];
    // Added at varied points of the next interval.
    await new Promise((resolve) => setTimeout(resolve, (i * 700) % 2_500));
  }
  await expectEachOnce(one.http, id, items);
  expect(late).toHaveLength(items.length);
  for (const ms of late) expect(ms).toBeLessThanOrEqual(INTERVAL_SECONDS * 1000 + CHECK_SLACK_MS);

  const readings = feed.readings().filter((at) => at >= from);
  const elapsed = Date.now() - from;
  // One reading per interval at most (each next check is an interval after the last one ended), never two for one due time.
  expect(readings.length).toBeLessThanOrEqual(Math.floor(elapsed / (INTERVAL_SECONDS * 1000)) + 2);
  for (const gap of gaps(feed.readings())) expect(gap).toBeGreaterThanOrEqual(INTERVAL_SECONDS * 1000 - 50);
  expect(await getSubscription(one.http, id)).toMatchObject({ status: 'active', seen_count: items.length });
}, 120_000);

test('when a process is killed (SIGKILL) in the middle of a check, then the subscription is checked again and nothing is lost or doubled', async () => {
  const feed = growingFeed('/killed');
  feed.add();
  const first = await start();
  const { id } = await subscribe(first.http, feed);
  await primed(first.http, id);

  const readingsBefore = feed.readings().length;
  feed.hold();
  const during = feed.add();
  await waitFor('a check to be reading the feed', () => feed.readings().length > readingsBefore, INTERVAL_SECONDS * 1000 + CHECK_SLACK_MS);
  // Longer than one hold: the running check renews it, so a check asked for now is refused.
  await new Promise((resolve) => setTimeout(resolve, (CHECK_LEASE_SECONDS + 3) * 1000));
  // Were the hold not renewed, this check would take the subscription and wait on the held feed.
  const asked = await within(5_000, 'a check asked for', first.http.request('POST', `/subscriptions/${id}/check`, '/subscriptions/{subscription_id}/check'));
  expect(asked.status).toBe(409);
  expect(feed.readings()).toHaveLength(readingsBefore + 1);
  await first.kill('SIGKILL');
  const killedAt = Date.now();
  // The killed check's answer never comes; later readings are answered at once.
  feed.release();

  const second = await start();
  const taken = await downloadedOnce(second.http, id, during, 45_000);
  // The dead check's hold runs out (CHECK_LEASE_SECONDS) and the retry of its job checks again.
  const takeover = lateness(taken, killedAt);
  expect(takeover).toBeLessThanOrEqual(30_000);

  const later = feed.add();
  const next = await downloadedOnce(second.http, id, later);
  expect(lateness(next, later.addedAt)).toBeLessThanOrEqual(INTERVAL_SECONDS * 1000 + CHECK_SLACK_MS);
  await expectEachOnce(second.http, id, [during, later]);
  expect(await getSubscription(second.http, id)).toMatchObject({ status: 'active', seen_count: 3, last_error: null });
}, 120_000);

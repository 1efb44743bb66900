import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createClient, type VideoDownloadClient } from '../src/client/index.ts';
import { expectPlain, startCli, type Run } from './support/cli-process.ts';
import { useService } from './support/harness.ts';
import { growingFeed, waitForSubscription } from './support/subscription-clients.ts';

// `vds subscribe`, `vds subscriptions` and `vds unsubscribe` as a person runs them, against the
// real service following feeds served on 127.0.0.1.

const { app, source } = useService({ subscriptionMinIntervalSeconds: 1 });
let work: string;
let sdk: VideoDownloadClient;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-cli-subscriptions-'));
  sdk = createClient({ baseUrl: app.service.url });
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const vds = (args: string[]): Promise<Run> => startCli(args, work, { VDS_SERVER: app.service.url }).done;
const UUID_LINE = /^([0-9a-f-]{36})\n$/;

test('when nothing is followed yet, then vds subscriptions says so on stderr and prints no table', async () => {
  const run = await vds(['subscriptions']);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe('');
  expect(run.stderr).toBe('no subscriptions; follow a channel, playlist or feed with: vds subscribe URL --every 1h\n');
});

test('when vds subscribe is given every option, then the subscription holds each, its id is printed, and a second subscribe names it', async () => {
  const feed = growingFeed(source, '/cli-sub/talks.xml', 'CLI talks');
  feed.publish('talk-1', 'talk-2');
  const run = await vds([
    'subscribe',
    feed.url,
    '--every',
    '1h30m',
    '--backfill',
    '1',
    '--match',
    'Episode',
    '--name',
    'My talks',
    '--audio',
    '-q',
    '720',
    '--clip',
    '0:05-1:00',
  ]);
  expect(run.code).toBe(0);
  const id = UUID_LINE.exec(run.stdout)?.[1];
  expect(id).toBeDefined();
  expect(run.stderr).toBe(`subscribed to ${feed.url}: its newest 1 now, then what is new every 1h30m; stop with: vds unsubscribe ${id}\n`);
  expectPlain(run);
  expect(await sdk.subscriptions.get(id!)).toMatchObject({
    url: feed.url,
    name: 'My talks',
    interval_seconds: 5_400,
    title_contains: 'Episode',
    options: { mode: 'audio', quality: 720, clip: { start_seconds: 5, end_seconds: 60 } },
  });

  const again = await vds(['subscribe', feed.url]);
  expect(again.code).toBe(1);
  expect(again.stdout).toBe('');
  expect(again.stderr).toBe(`vds: Already subscribed to ${feed.url}: subscription ${id}.\n`);
});

test('when vds subscriptions lists them, then each is a row with its id, status, interval, checks, seen count and name; a failing one has its error under it', async () => {
  const good = growingFeed(source, '/cli-sub/listed.xml', 'Listed feed');
  good.publish('l-1', 'l-2', 'l-3');
  const bad = growingFeed(source, '/cli-sub/broken.xml', 'Broken feed');
  bad.publish('b-1');
  const listed = await sdk.subscriptions.create({ url: good.url, interval_seconds: 900 });
  const broken = await sdk.subscriptions.create({ url: bad.url, interval_seconds: 86_400 });
  await waitForSubscription(sdk, listed.id, (subscription) => subscription.seen_count === 3);
  await waitForSubscription(sdk, broken.id);
  bad.fail(500);
  await sdk.subscriptions.check(broken.id).catch(() => undefined);

  const run = await vds(['subscriptions']);
  expect(run.code).toBe(0);
  expectPlain(run);
  const lines = run.stdout.split('\n');
  expect(lines[0]).toMatch(/^ID +STATUS +EVERY +LAST CHECK +NEXT CHECK +SEEN +NAME OR URL$/);
  const row = (id: string) => lines.find((line) => line.startsWith(id));
  expect(row(listed.id)).toMatch(new RegExp(`^${listed.id}  active +15m +(\\d+s ago|just now) +in 1[45]m +3 +Listed feed$`));
  expect(row(broken.id)).toMatch(new RegExp(`^${broken.id}  failing +1d +(\\d+s ago|just now) +in \\d+[hd] +1 +Broken feed$`));
  expect(lines[lines.indexOf(row(broken.id)!) + 1]).toMatch(/^ {2}last error \(source_http_error\): .*500/);
  // Every row's columns start where the header's do.
  const seenAt = lines[0]!.indexOf('SEEN');
  for (const line of lines.filter((line) => /^[0-9a-f]{8}-/.test(line))) expect(line.slice(seenAt - 2, seenAt)).toBe('  ');
});

test('when --archive names a yt-dlp archive file, then its entries count as seen; a file that is not there is said before anything is created', async () => {
  const feed = growingFeed(source, '/cli-sub/archived.xml', 'Archived');
  feed.publish('a-1', 'a-2');
  const archive = path.join(work, 'archive.txt');
  await writeFile(archive, 'feed a-1\nfeed a-2\n');
  const missing = await vds(['subscribe', feed.url, '--archive', path.join(work, 'nowhere.txt')]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toBe(`vds: Cannot read the archive file ${path.join(work, 'nowhere.txt')} (ENOENT).\n`);
  expect((await sdk.subscriptions.list({ limit: 100 })).items.map((subscription) => subscription.url)).not.toContain(feed.url);

  const run = await vds(['subscribe', feed.url, '--archive', archive, '--backfill', '2']);
  expect(run.code).toBe(0);
  expect(run.stderr).toMatch(/: its newest 2 now, then what is new every 1h; stop with/);
  const id = UUID_LINE.exec(run.stdout)![1]!;
  const read = await waitForSubscription(sdk, id);
  // Both entries were in the archive: the backfill finds nothing to download.
  expect(read).toMatchObject({ seen_count: 2, last_collection_id: null });
  expect((await sdk.subscriptions.archive(id)).split('\n').filter(Boolean).sort()).toEqual(['feed a-1', 'feed a-2']);
});

test.each([
  [['--every', '5x'], /option '--every <duration>' argument '5x' is invalid\. Use a duration such as 90s, 15m, 1h or 1d, or a number of seconds\./],
  [['--every', '31d'], /argument '31d' is invalid\. Use at most 30 days \(30d\)\./],
  [['--backfill', '-1'], /argument '-1' is invalid\. Use a whole number from 0 to 500\./],
  [['--audio-format', 'mp3'], /option '--audio-format' goes with '--audio'/],
])('when vds subscribe is given %j, then it exits 2 saying why, and nothing is created', async (options, said) => {
  const url = source.url(`/cli-sub/never-${options.join('')}.xml`);
  const run = await vds(['subscribe', url, ...options]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(said);
  expect((await sdk.subscriptions.list({ limit: 100 })).items.map((subscription) => subscription.url)).not.toContain(url);
});

test('when vds unsubscribe is given an id, then it stops that subscription; a second time, it exits 1 saying there is none', async () => {
  const feed = growingFeed(source, '/cli-sub/leaving.xml', 'Leaving');
  const created = await sdk.subscriptions.create({ url: feed.url, interval_seconds: 3_600, name: 'Leaving soon' });
  const run = await vds(['unsubscribe', created.id]);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe(`${created.id}: unsubscribed from Leaving soon; its downloads and collections stay\n`);
  await expect(sdk.subscriptions.get(created.id)).rejects.toMatchObject({ status: 404 });

  const again = await vds(['unsubscribe', created.id]);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(new RegExp(`^vds: .*${created.id}.*\\n$`));
  const notAnId = await vds(['unsubscribe', 'nope']);
  expect(notAnId.code).toBe(2);
  expect(notAnId.stderr).toMatch(/A subscription id is a UUID/);
});

test('when vds --help is asked, then it tells how to follow a channel or feed', async () => {
  const run = await vds(['--help']);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/vds subscribe URL --every 1h +follow it/);
  expect(run.stdout).toMatch(/vds unsubscribe ID +stop following it/);
  const sub = await vds(['subscribe', '--help']);
  expect(sub.stdout).toMatch(/--every <duration> +how often to check: 90s, 15m, 1h, 1d, or seconds/);
  expect(sub.stdout).toMatch(/--archive <file> +a yt-dlp --download-archive file/);
});

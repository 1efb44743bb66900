import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { probe } from '../src/media/probe.ts';
import { startTestService, type Download, type TestService } from './support/api.ts';
import { launchBrowser } from './support/browser.ts';
import { childrenOf } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { resolveFfmpeg } from './support/ffmpeg.ts';
import { mediaPath } from './support/media.ts';
import { waitFor } from './support/waiting.ts';

// The page as a person uses it, in Debian's chromium: paste, press Enter, watch, save, cancel; with
// a real source and the real service. Each state is photographed into test/artifacts/.

const artifacts = fileURLToPath(new URL('artifacts/', import.meta.url));
const API_KEY = 'web-test-key-90af';
const OTHER_KEY = 'web-test-other-key-3d7e';

const { app, source } = useService();
let guarded: TestService;
let browser: Browser;
let bigSize: number;

beforeAll(async () => {
  [guarded, browser] = await Promise.all([startTestService({ apiKeys: [API_KEY, OTHER_KEY] }), launchBrowser()]);
  bigSize = (await stat(mediaPath('big.mp4'))).size;
  await mkdir(artifacts, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await guarded?.stop();
});

async function openPage(service: TestService, width = 1000): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  const answer = await page.goto(`${service.service.url}/`);
  // Reached over plain HTTP on a LAN address, the page must not have its files upgraded to HTTPS.
  expect(answer?.headers()['content-security-policy']).not.toContain('upgrade-insecure-requests');
  // A broken bundle would throw before this answers.
  await page.locator('#url').waitFor();
  expect(failures).toEqual([]);
  return page;
}

const card = (page: Page, id: string) => page.locator(`li.download[data-id="${id}"]`);

/** Pastes a URL and presses Enter, as a person would; returns the id of the card that appears on top. */
async function submit(page: Page, url: string): Promise<string> {
  await page.fill('#url', url);
  await page.press('#url', 'Enter');
  const top = page.locator('li.download').first();
  await waitFor('the new download on the page', async () => (await top.getAttribute('data-id')) !== null && (await page.inputValue('#url')) === '', 15_000);
  return (await top.getAttribute('data-id'))!;
}

test('when a URL is submitted, then its progress moves live to completed and the page link saves the source, byte for byte', async () => {
  const page = await openPage(app);
  const url = source.file('/page.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / 4) });
  const id = await submit(page, url);
  const item = card(page, id);

  const seen = new Set<number>();
  await waitFor(
    'the bar to move, then the download to complete',
    async () => {
      const value = await item.locator('progress').evaluate((bar: { value: number }) => bar.value);
      seen.add(Math.round(value));
      if ((await item.getAttribute('data-status')) === 'downloading' && seen.size === 2) await page.screenshot({ path: `${artifacts}downloading.png` });
      return (await item.getAttribute('data-status')) === 'completed';
    },
    30_000,
  );
  expect([...seen].filter((value) => value > 0 && value < 100).length).toBeGreaterThan(0);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Ready · [\d.]+ [KM]B$/);
  await page.screenshot({ path: `${artifacts}completed.png` });

  const [saved] = await Promise.all([page.waitForEvent('download'), item.getByRole('link', { name: 'Save the file' }).click()]);
  expect(saved.suggestedFilename()).toBe('page.mp4');
  expect((await readFile(await saved.path())).equals(await readFile(mediaPath('big.mp4')))).toBe(true);
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('completed');
  await page.context().close();
});

test('when "Sound only" is chosen, then the ready file is the audio as .m4a; Remove then lets it go, and the card says expired', async () => {
  const page = await openPage(app);
  await page.selectOption('#mode', 'audio');
  const id = await submit(page, source.file('/sound.mp4', mediaPath('clip.mp4')));
  const item = card(page, id);
  await waitFor('completed', async () => (await item.getAttribute('data-status')) === 'completed', 30_000);
  const done = (await app.http.getDownload(id)).body as Download;
  expect(done).toMatchObject({ mode: 'audio', file: { filename: 'sound.m4a', content_type: 'audio/mp4', video_codec: null } });
  await expect(item.getByRole('link', { name: 'Save the file' }).getAttribute('download')).resolves.toBe('sound.m4a');

  await item.getByRole('button', { name: 'Remove' }).click();
  await waitFor('expired on the page', async () => (await item.getAttribute('data-status')) === 'expired', 10_000);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Expired/);
  await expect(item.getByRole('link', { name: 'Save the file' }).isHidden()).resolves.toBe(true);
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('expired');
  expect((await app.http.getFile(done.download_url!)).status).toBe(410);
  await page.screenshot({ path: `${artifacts}removed.png` });
  await page.context().close();
});

test('when a ready file is lost from storage, then the page shows it expired, not Ready, and offers no link', async () => {
  const created = await app.http.createDownload({ url: source.file('/lost-page.mp4', mediaPath('clip.mp4')) });
  const done = await app.waitForStatus((created.body as Download).id, ['completed']);
  await rm(path.join(app.config.dataDir, 'files', done.id));
  const page = await openPage(app);
  const item = card(page, done.id);
  await waitFor('expired on the page', async () => (await item.getAttribute('data-status')) === 'expired', 10_000);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Expired/);
  await expect(item.getByRole('link', { name: 'Save the file' }).isHidden()).resolves.toBe(true);
  await page.context().close();
});

test('when a ready file is lost while the page shows it, then Save the file turns the card to expired', async () => {
  const created = await app.http.createDownload({ url: source.file('/lost-open.mp4', mediaPath('clip.mp4')) });
  const done = await app.waitForStatus((created.body as Download).id, ['completed']);
  const page = await openPage(app);
  const item = card(page, done.id);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Ready/);
  await rm(path.join(app.config.dataDir, 'files', done.id));
  await item.getByRole('link', { name: 'Save the file' }).click();
  await waitFor('expired on the page', async () => (await item.getAttribute('data-status')) === 'expired', 10_000);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Expired/);
  await page.context().close();
});

test('when Cancel is pressed on a slow download, then it ends cancelled on the page and on the server', async () => {
  const page = await openPage(app, 390);
  const id = await submit(page, source.file('/slow-page.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / 60) }));
  const item = card(page, id);
  await waitFor('downloading', async () => (await item.getAttribute('data-status')) === 'downloading', 15_000);
  await page.screenshot({ path: `${artifacts}narrow-downloading.png`, fullPage: true });
  await item.getByRole('button', { name: 'Cancel' }).click();
  await waitFor('cancelled on the page', async () => (await item.getAttribute('data-status')) === 'cancelled', 10_000);
  await expect(item.getByRole('button', { name: 'Cancel' }).isHidden()).resolves.toBe(true);
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('cancelled');
  await page.screenshot({ path: `${artifacts}narrow-cancelled.png`, fullPage: true });
  await page.context().close();
});

test('when the clip fields are filled and Download pressed, then the download has that clip, its card says so, and the saved file lasts about what was asked', async () => {
  const page = await openPage(app);
  await page.getByLabel('from', { exact: true }).fill('0:02');
  await page.getByLabel('to', { exact: true }).fill('4.5');
  const id = await submit(page, source.file('/page-clip.mp4', mediaPath('keyframes.mp4')));
  const item = card(page, id);
  await waitFor('completed', async () => (await item.getAttribute('data-status')) === 'completed', 30_000);
  expect(((await app.http.getDownload(id)).body as Download).clip).toEqual({ start_seconds: 2, end_seconds: 4.5 });
  await expect(item.locator('.source').innerText()).resolves.toContain('clip from 0:02 to 0:04.5');
  // The fields go with the link they were for.
  await expect(page.inputValue('#clip-start')).resolves.toBe('');
  const [saved] = await Promise.all([page.waitForEvent('download'), item.getByRole('link', { name: 'Save the file' }).click()]);
  // Cut at the keyframe at 2 s (one a second): 2.5 s asked for, and no more than the lead-in of the keyframe on top.
  const { durationSeconds } = await probe({ ffmpeg: await resolveFfmpeg(), file: await saved.path() });
  expect(durationSeconds).toBeGreaterThanOrEqual(2.5);
  expect(durationSeconds).toBeLessThan(2.7);
  await page.screenshot({ path: `${artifacts}clip.png` });
  await page.context().close();
});

test.each([
  ['a time that is none', '1:75', '', '"1:75" is not a time'],
  ['a start after the end', '2:00', '1:30', 'The clip must start before it ends.'],
])('when the clip has %s, then the page says so under the form and posts nothing', async (_case, start, end, message) => {
  const page = await openPage(app);
  const posts: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST') posts.push(request.url());
  });
  await page.getByLabel('from', { exact: true }).fill(start);
  await page.getByLabel('to', { exact: true }).fill(end);
  await page.fill('#url', source.file('/page-bad-clip.mp4', mediaPath('keyframes.mp4')));
  await page.getByRole('button', { name: 'Download' }).click();
  const error = page.locator('#form-error');
  await error.waitFor();
  await expect(error.innerText()).resolves.toContain(message);
  expect(posts).toEqual([]);
  await expect(page.inputValue('#url')).resolves.not.toBe('');
  await page.context().close();
});

test('when the URL is not one the contract takes, then the validator says why under the form', async () => {
  const page = await openPage(app);
  await page.fill('#url', 'ftp://127.0.0.1/clip.mp4');
  await page.getByRole('button', { name: 'Download' }).click();
  const error = page.locator('#form-error');
  await error.waitFor();
  await expect(error.innerText()).resolves.toBe('The request is invalid. url must be a full link starting with http:// or https://.');
  await page.screenshot({ path: `${artifacts}invalid-url.png` });
  await page.context().close();
});

test('when the server has API keys, then the page asks for one, a wrong key is told so, and the right one works', async () => {
  const page = await openPage(guarded);
  await expect(page.locator('#key-row').isVisible()).resolves.toBe(true);
  await waitFor('the list to ask for a key', async () => (await page.locator('#list-note').innerText()).includes('API key'), 10_000);

  await page.fill('#api-key', 'not-the-key');
  await page.fill('#url', source.file('/keyed.mp4', mediaPath('clip.mp4')));
  await page.press('#url', 'Enter');
  const error = page.locator('#form-error');
  await error.waitFor();
  await expect(error.innerText()).resolves.toBe('The API key was not accepted; check it and try again.');
  await page.screenshot({ path: `${artifacts}wrong-key.png` });

  // The key is kept once typed, before anything is created with it; the key error then goes.
  await page.fill('#api-key', API_KEY);
  await page.press('#api-key', 'Tab');
  await page.reload();
  await expect(page.inputValue('#api-key')).resolves.toBe(API_KEY);
  await waitFor('the list with the key', async () => (await page.locator('#list-note').innerText()) === 'No downloads yet.', 10_000);
  const id = await submit(page, source.file('/keyed.mp4', mediaPath('clip.mp4')));
  await expect(error.isHidden()).resolves.toBe(true);
  await waitFor('completed', async () => (await card(page, id).getAttribute('data-status')) === 'completed', 30_000);
  // The key stays in this browser for the next visit, and the list shows what it was used for.
  await page.reload();
  await expect(page.inputValue('#api-key')).resolves.toBe(API_KEY);
  await waitFor('the download listed after a reload', async () => (await card(page, id).count()) === 1, 10_000);
  await page.screenshot({ path: `${artifacts}keyed-after-reload.png` });

  // Emptying the field forgets the key in this browser.
  await page.fill('#api-key', '');
  await page.press('#api-key', 'Tab');
  await page.reload();
  await expect(page.inputValue('#api-key')).resolves.toBe('');
  await expect(page.evaluate<number>('localStorage.length')).resolves.toBe(0);
  await page.context().close();
});

test("when two people use the page with different keys, then each one's recent list holds only their own downloads", async () => {
  const created = async (key: string) => {
    const res = await guarded.http.createDownload({ url: source.file(`/own-${key}.mp4`, mediaPath('clip.mp4')) }, { Authorization: `Bearer ${key}` });
    expect(res.status).toBe(202);
    return (res.body as Download).id;
  };
  const [mine, theirs] = [await created(API_KEY), await created(OTHER_KEY)];
  const page = await openPage(guarded);
  await page.fill('#api-key', OTHER_KEY);
  await page.press('#api-key', 'Tab');
  await page.reload();
  await waitFor('their download listed', async () => (await card(page, theirs).count()) === 1, 10_000);
  await expect(card(page, mine).count()).resolves.toBe(0);
  await page.context().close();
});

test('when more downloads are unfinished than the browser has connections for one server, then the page still creates, cancels, and keeps every card up to date', async () => {
  const page = await openPage(app);
  // Eight slow downloads (four run, four wait for a worker); a browser gives one server six connections.
  const slow = await Promise.all(
    Array.from({ length: 8 }, async (_, index) => {
      const url = source.file(`/crowd-${index}.mp4`, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / 120) });
      return ((await app.http.createDownload({ url })).body as Download).id;
    }),
  );
  try {
    await page.reload();
    await waitFor('the running cards', async () => (await page.locator('li.download[data-status="downloading"]').count()) === 4, 15_000);

    const id = await submit(page, source.file('/crowd-new.mp4', mediaPath('clip.mp4')));
    expect(((await app.http.getDownload(id)).body as Download).status).toBe('queued');

    // The oldest running card is past the streams the page holds: it is kept up to date all the
    // same. (Which four run is the queue's choice: creates that arrive together commit together.)
    const oldestId = (await page.locator('li.download[data-status="downloading"]').last().getAttribute('data-id'))!;
    expect(slow).toContain(oldestId);
    const oldest = card(page, oldestId);
    const state = () => oldest.locator('.state').innerText();
    const first = await waitFor('bytes on the oldest card', async () => ((await state()).includes(' of ') ? state() : undefined), 15_000);
    await waitFor('more bytes on the oldest card', async () => (await state()) !== first, 15_000);
    await oldest.getByRole('button', { name: 'Cancel' }).click();
    await waitFor('cancelled on the page', async () => (await oldest.getAttribute('data-status')) === 'cancelled', 10_000);
    expect(((await app.http.getDownload(oldestId)).body as Download).status).toBe('cancelled');
    await page.screenshot({ path: `${artifacts}crowded.png`, fullPage: true });
  } finally {
    await page.context().close();
    await Promise.all(slow.map((other) => app.http.request('DELETE', `/downloads/${other}`, '/downloads/{download_uuid}')));
  }
});

test('when an attempt fails and the next one succeeds, then the card says it will try again, and once ready it shows no error', async () => {
  const page = await openPage(app);
  // The page previews a link first (does it hold several videos?): that read takes the first 503,
  // the download's first attempt the second.
  const id = await submit(page, source.file('/flaky-page.mp4', mediaPath('clip.mp4'), { statuses: [503, 503] }));
  const item = card(page, id);
  await waitFor('completed', async () => (await item.getAttribute('data-status')) === 'completed', 30_000);
  expect(((await app.http.getDownload(id)).body as Download).attempts).toBe(2);
  await expect(item.locator('.error').isHidden()).resolves.toBe(true);
  // A screen reader was told it is ready, once, in the page's live region.
  await expect(page.locator('#announce').innerText()).resolves.toMatch(/^flaky-page\.mp4: Ready/);
  await page.context().close();
});

test('when several links are pasted, one a line, then a collection card shows each entry with its state, its save link and the counts; Cancel the rest stops what has not ended', async () => {
  const page = await openPage(app);
  const links = [
    source.file('/batch-page/first.mp4', mediaPath('clip.mp4')),
    source.url('/batch-page/missing.mp4'),
    source.file('/batch-page/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / 60) }),
  ];
  // Shift+Enter starts another line; Enter sends them all.
  await page.fill('#url', links[0]!);
  for (const link of links.slice(1)) {
    await page.press('#url', 'Shift+Enter');
    await page.keyboard.insertText(link);
  }
  expect((await page.inputValue('#url')).split('\n')).toEqual(links);
  await page.press('#url', 'Enter');
  const collection = page.locator('li.collection').first();
  await waitFor(
    'the collection on the page',
    async () => (await collection.getAttribute('data-id')) !== null && (await page.inputValue('#url')) === '',
    15_000,
  );
  const id = (await collection.getAttribute('data-id'))!;
  const entry = (n: number) => collection.locator(`li.download[data-index="${n}"]`);

  await waitFor(
    'the first ready, the second failed, the third downloading',
    async () =>
      (await entry(1).getAttribute('data-status')) === 'completed' &&
      (await entry(2).getAttribute('data-status')) === 'failed' &&
      (await entry(3).getAttribute('data-status')) === 'downloading',
    30_000,
  );
  await expect(collection.locator('> .state').innerText()).resolves.toBe('Downloading · 1 of 3 ready · 1 failed · 1 to go');
  await expect(entry(2).locator('.error').innerText()).resolves.toMatch(/source_http_error/);
  await page.screenshot({ path: `${artifacts}collection-running.png`, fullPage: true });

  const [saved] = await Promise.all([page.waitForEvent('download'), entry(1).getByRole('link', { name: 'Save the file' }).click()]);
  expect(saved.suggestedFilename()).toBe('first.mp4');
  expect((await readFile(await saved.path())).equals(await readFile(mediaPath('clip.mp4')))).toBe(true);

  await collection.getByRole('button', { name: /^Cancel the rest/ }).click();
  await waitFor('cancelled on the page', async () => (await collection.getAttribute('data-status')) === 'cancelled', 10_000);
  await waitFor('the third entry cancelled', async () => (await entry(3).getAttribute('data-status')) === 'cancelled', 10_000);
  await expect(collection.getByRole('button', { name: /^Cancel the rest/ }).isHidden()).resolves.toBe(true);
  const server = (await app.http.request('GET', `/collections/${id}`, '/collections/{collection_id}')).body as {
    status: string;
    counts: Record<string, number>;
  };
  expect(server).toMatchObject({ status: 'cancelled', counts: { total: 3, completed: 1, failed: 1, cancelled: 1 } });
  await page.screenshot({ path: `${artifacts}collection-cancelled.png`, fullPage: true });

  // After a reload the collection is listed with its entries, which are not listed again on their own; a download of its own is.
  const alone = ((await app.http.createDownload({ url: source.file('/batch-page/alone.mp4', mediaPath('clip.mp4')) })).body as Download).id;
  await page.reload();
  await waitFor('the collection listed again', async () => (await page.locator(`li.collection[data-id="${id}"] li.download`).count()) === 3, 10_000);
  await waitFor('the download of its own listed', async () => (await page.locator(`#downloads li.download[data-id="${alone}"]`).count()) === 1, 10_000);
  for (const child of await childrenOf(app.http, id)) {
    await expect(page.locator(`li.collection[data-id="${id}"] li.download[data-id="${child.id}"]`).count()).resolves.toBe(1);
    await expect(page.locator(`#downloads li.download[data-id="${child.id}"]`).count()).resolves.toBe(0);
  }
  await page.context().close();
});

test('when a feed of several videos is pasted, then the page makes it a collection card named after the feed, each entry ready to save', async () => {
  const items = ['one', 'two'].map((name, i) => {
    const url = source.file(`/page-feed/${name}.mp4`, mediaPath('clip.mp4'));
    return `<item><title>Talk ${name}</title><guid>page-talk-${i + 1}</guid><enclosure url="${url}" type="video/mp4" length="1"/></item>`;
  });
  const rss = `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Page talks</title>${items.join('')}</channel></rss>`;
  const feed = source.content('/page-feed.xml', rss, { headers: { 'Content-Type': 'application/rss+xml; charset=utf-8' } });
  const page = await openPage(app);
  await page.fill('#url', feed);
  await page.press('#url', 'Enter');
  const collection = page.locator('li.collection').first();
  await waitFor('the feed as a collection, done', async () => (await collection.getAttribute('data-status')) === 'completed', 30_000);
  await expect(collection.locator('> .title').innerText()).resolves.toBe('Page talks');
  await expect(collection.locator('> .state').innerText()).resolves.toBe('Done · 2 of 2 ready');
  await expect(collection.getByRole('link', { name: 'Save the file' }).count()).resolves.toBe(2);
  await page.context().close();
});

test('when the page template is asked for under /web, then it is not there; the page is at / only', async () => {
  const res = await fetch(`${app.service.url}/web/index.html`);
  expect(res.status).toBe(404);
});

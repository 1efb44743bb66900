import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { createClient, type VideoDownloadClient } from '../src/client/index.ts';
import { startTestService, type TestService } from './support/api.ts';
import { launchBrowser } from './support/browser.ts';
import { useService } from './support/harness.ts';
import { growingFeed, waitForSubscription } from './support/subscription-clients.ts';
import { waitFor } from './support/waiting.ts';

// The page's subscriptions as a person uses them, in Debian's chromium, against the real service
// following feeds served on 127.0.0.1: subscribe, check now, see what is new, see why one fails,
// unsubscribe. Each state is photographed into test/artifacts/.

const artifacts = fileURLToPath(new URL('artifacts/', import.meta.url));

const API_KEY = 'web-sub-key-51c0';
const OTHER_KEY = 'web-sub-other-key-8e2a';

const { app, source } = useService({ subscriptionMinIntervalSeconds: 1 });
let guarded: TestService;
let browser: Browser;
let sdk: VideoDownloadClient;

beforeAll(async () => {
  [guarded, browser] = await Promise.all([startTestService({ apiKeys: [API_KEY, OTHER_KEY], subscriptionMinIntervalSeconds: 1 }), launchBrowser()]);
  sdk = createClient({ baseUrl: app.service.url });
  await mkdir(artifacts, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await guarded?.stop();
});

async function openPage(service: TestService = app): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 1200 } });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (error) => failures.push(error.message));
  // A dialog would mean server text ran as script.
  page.on('dialog', (dialog) => failures.push(`dialog: ${dialog.message()}`));
  await page.goto(`${service.service.url}/`);
  await page.locator('#subscribe-url').waitFor();
  expect(failures).toEqual([]);
  return page;
}

const card = (page: Page, id: string) => page.locator(`li.subscription[data-id="${id}"]`);

test('when a feed is subscribed on the page, then its card shows it; Check now says nothing new, then links to the collection of what is new', async () => {
  const feed = growingFeed(source, '/page-sub/show.xml', 'Page show');
  feed.publish('ps-1', 'ps-2');
  const page = await openPage();
  await waitFor('the empty list said', async () => (await page.locator('#subscriptions-note').innerText()) === 'No subscriptions yet.');
  await page.fill('#subscribe-url', feed.url);
  await page.fill('#subscribe-every', '2h');
  await page.getByRole('button', { name: 'Subscribe', exact: true }).click();
  const item = page.locator('li.subscription').first();
  await waitFor(
    'the new subscription on the page',
    async () => (await item.getAttribute('data-id')) !== null && (await page.inputValue('#subscribe-url')) === '',
  );
  const id = (await item.getAttribute('data-id'))!;
  expect(await sdk.subscriptions.get(id)).toMatchObject({ url: feed.url, interval_seconds: 7_200 });
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Active · every 2h · \d+ seen$/);
  await waitForSubscription(sdk, id);

  const check = item.getByRole('button', { name: /^Check .* now$/ });
  await check.click();
  await waitFor('the check to answer', async () => (await item.locator('.outcome').innerText()) === 'Nothing new.');
  // Once checked the card tells it, from the service's own answer.
  await expect(item.locator('.title').innerText()).resolves.toBe('Page show');
  await expect(item.locator('.source').innerText()).resolves.toBe(feed.url);
  await expect(item.locator('.state').innerText()).resolves.toBe('Active · every 2h · 2 seen');
  await expect(item.locator('.checks').innerText()).resolves.toMatch(/^Checked (just now|\d+s ago) · next in [12]h$/);

  feed.publish('ps-3');
  await check.click();
  const link = item.getByRole('link', { name: 'Show the new entries of Page show' });
  await link.waitFor();
  await expect(item.locator('.outcome').innerText()).resolves.toBe('1 new entry: Show them');
  const collectionId = (await link.getAttribute('href'))!.replace('#collection-', '');
  expect((await sdk.subscriptions.get(id)).last_collection_id).toBe(collectionId);
  const collection = page.locator(`li.collection#collection-${collectionId}`);
  await expect(collection.count()).resolves.toBe(1);
  await waitFor('the collection done on the page', async () => (await collection.getAttribute('data-status')) === 'completed', 30_000);
  await link.click();
  expect(new URL(page.url()).hash).toBe(`#collection-${collectionId}`);
  await expect(item.locator('.state').innerText()).resolves.toBe('Active · every 2h · 3 seen');
  await page.screenshot({ path: `${artifacts}subscription-checked.png`, fullPage: true });
  await page.context().close();
});

test('when a source fails, then its card says Failing with the error as text; names and errors from the server are never HTML', async () => {
  // The feed's title, as its XML escapes it: markup once read.
  const name = '<img src=x onerror="alert(1)"><b>bold</b>';
  const feed = growingFeed(source, '/page-sub/broken.xml', name.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;'));
  feed.publish('pb-1');
  const created = await sdk.subscriptions.create({ url: feed.url, interval_seconds: 86_400 });
  await waitForSubscription(sdk, created.id);
  feed.fail(500);
  const page = await openPage();
  const item = card(page, created.id);
  await item.waitFor();
  await expect(item.locator('.title').innerText()).resolves.toBe(name);
  await expect(page.locator('li.subscription img, li.subscription b').count()).resolves.toBe(0);

  await item.getByRole('button', { name: /^Check .* now$/ }).click();
  await waitFor('failing on the page', async () => (await item.getAttribute('data-status')) === 'failing', 15_000);
  await expect(item.locator('.state').innerText()).resolves.toMatch(/^Failing · every 1d · 1 seen$/);
  const server = await sdk.subscriptions.get(created.id);
  await expect(item.locator('.error').innerText()).resolves.toContain(server.last_error!.message);
  await page.screenshot({ path: `${artifacts}subscription-failing.png`, fullPage: true });

  // On the next visit it is still failing, with the recorded error, until a check succeeds.
  await page.reload();
  await expect(card(page, created.id).locator('.error').innerText()).resolves.toBe(`${server.last_error!.message} (source_http_error)`);
  await page.context().close();
});

test('when the interval is not a duration, or the URL is followed already, then the form says why and nothing more is created', async () => {
  const feed = growingFeed(source, '/page-sub/twice.xml', 'Twice');
  const first = await sdk.subscriptions.create({ url: feed.url, interval_seconds: 3_600 });
  const page = await openPage();
  const error = page.locator('#subscribe-error');

  await page.fill('#subscribe-url', feed.url);
  await page.fill('#subscribe-every', 'often');
  await page.getByRole('button', { name: 'Subscribe', exact: true }).click();
  await error.waitFor();
  await expect(error.innerText()).resolves.toBe('Check every: write a time such as 15m, 1h or 1d (at most 30d).');

  await page.fill('#subscribe-every', '1d');
  await page.getByRole('button', { name: 'Subscribe', exact: true }).click();
  await waitFor('the conflict said', async () => (await error.innerText()).includes(first.id), 10_000);
  const all = (await sdk.subscriptions.list({ limit: 100 })).items.filter((subscription) => subscription.url === feed.url);
  expect(all.map((subscription) => subscription.id)).toEqual([first.id]);
  await page.screenshot({ path: `${artifacts}subscription-conflict.png`, fullPage: true });
  await page.context().close();
});

test('when Unsubscribe is pressed, then the card goes and the service has it no more', async () => {
  const feed = growingFeed(source, '/page-sub/leaving.xml', 'Leaving');
  const created = await sdk.subscriptions.create({ url: feed.url, interval_seconds: 3_600, name: 'Leaving soon' });
  const page = await openPage();
  const item = card(page, created.id);
  await item.waitFor();
  await item.getByRole('button', { name: 'Unsubscribe from Leaving soon' }).click();
  await waitFor('the card gone', async () => (await item.count()) === 0);
  await expect(sdk.subscriptions.get(created.id)).rejects.toMatchObject({ status: 404 });
  await expect(page.locator('#announce').innerText()).resolves.toBe('Unsubscribed from Leaving soon.');
  await page.context().close();
});

test("when the server has API keys, then the list asks for one, and with a key it shows that key's subscriptions only; a refused key empties it", async () => {
  const [mine, theirs] = await Promise.all(
    [API_KEY, OTHER_KEY].map((key, index) =>
      createClient({ baseUrl: guarded.service.url, apiKey: key }).subscriptions.create({
        url: source.url(`/page-sub/keyed-${index}.xml`),
        name: `Feed of key ${index}`,
      }),
    ),
  );
  const page = await openPage(guarded);
  const note = page.locator('#subscriptions-note');
  await waitFor('the list to ask for a key', async () => (await note.innerText()).includes('API key'), 10_000);
  await expect(page.locator('li.subscription').count()).resolves.toBe(0);

  await page.fill('#api-key', API_KEY);
  await page.press('#api-key', 'Tab');
  await waitFor('the list with the key', async () => (await card(page, mine!.id).count()) === 1, 10_000);
  await expect(card(page, theirs!.id).count()).resolves.toBe(0);
  await expect(note.innerText()).resolves.toBe('');

  // A key no longer accepted: what the list showed goes, and the note says why.
  await page.fill('#api-key', 'not-a-key');
  await page.press('#api-key', 'Tab');
  await waitFor('the refusal said', async () => (await note.innerText()) === 'The API key was not accepted; check it and try again.', 10_000);
  await expect(page.locator('li.subscription').count()).resolves.toBe(0);
  await page.context().close();
});

test('when the list is asked for again, then each card shows the change, and a focused button keeps the focus', async () => {
  const feeds = ['first', 'second'].map((name) => growingFeed(source, `/page-sub/refresh-${name}.xml`, name));
  const first = await sdk.subscriptions.create({ url: feeds[0]!.url, interval_seconds: 3_600, name: 'Older one' });
  const second = await sdk.subscriptions.create({ url: feeds[1]!.url, interval_seconds: 3_600, name: 'Newer one' });
  const page = await openPage();
  const button = card(page, first.id).getByRole('button', { name: 'Check Older one now' });
  await button.focus();
  await sdk.subscriptions.update(second.id, { enabled: false });
  // The page asks every 15 s.
  await waitFor('the pause on the page', async () => (await card(page, second.id).getAttribute('data-status')) === 'paused', 20_000);
  await expect(card(page, second.id).locator('.checks').innerText()).resolves.toMatch(/ · no check until resumed$/);
  await expect(page.evaluate<string | null>("document.activeElement.getAttribute('aria-label')")).resolves.toBe('Check Older one now');
  await page.context().close();
});

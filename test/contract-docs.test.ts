import { readFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { parse } from 'yaml';
import { startTestService, type TestService } from './support/api.ts';
import { launchBrowser } from './support/browser.ts';
import { waitFor } from './support/waiting.ts';

// The contract as the service hands it out: openapi.yaml itself, and the Redoc page built from it,
// both without an API key, the page rendered by a real browser that asks nothing of another host.

type Operation = { summary: string; operationId?: string; tags: string[] };
type Spec = {
  servers: { url: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
};

const API_KEY = 'docs-test-key-7d2e';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let app: TestService;
let nested: TestService;
let browser: Browser;
let specText: string;
let spec: Spec;

beforeAll(async () => {
  [app, nested, browser] = await Promise.all([
    startTestService({ role: 'api', apiKeys: [API_KEY] }),
    startTestService({ role: 'api', basePath: '/api', publicBaseUrl: 'https://videos.example.com' }),
    launchBrowser(),
  ]);
  specText = await readFile(new URL('../openapi.yaml', import.meta.url), 'utf8');
  spec = parse(specText) as Spec;
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.stop(), nested?.stop()]);
});

/** Every operation and webhook of the spec, as `METHOD /path` (or the webhook's name) with its summary and tags. */
function operations(): { name: string; route: string; method: string; operation: Operation }[] {
  const of = (items: Spec['paths']) =>
    Object.entries(items).flatMap(([route, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${route}`, route, method, operation })),
    );
  return [...of(spec.paths), ...of(spec.webhooks)];
}

/** The contract as served: openapi.yaml with its one server where the service is reached. */
function servedAt(url: string): Spec {
  return { ...spec, servers: [{ url, description: expect.any(String) as string }] };
}

test('when /openapi.yaml is asked for without an API key, then it is the contract, its server the origin it was asked at', async () => {
  const res = await app.http.request('GET', '/openapi.yaml', '/openapi.yaml');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/yaml/);
  // Not the default local server of the file: a client generated from it would call 127.0.0.1:3000.
  expect(spec.servers).not.toEqual([expect.objectContaining({ url: app.service.url })]);
  expect(parse(res.text)).toEqual(servedAt(app.service.url));
  // Everything but the server is the file's own text, comments and all.
  const around = (text: string) => [text.slice(0, text.indexOf('\nservers:')), text.slice(text.indexOf('\nsecurity:'))];
  expect(around(res.text)).toEqual(around(specText));
  // The operations behind the key stay behind it.
  expect((await app.http.request('GET', '/downloads', '/downloads')).status).toBe(401);
});

test('when /docs is asked for without an API key, then it is an HTML page that names every operation', async () => {
  const page = await app.http.request('GET', '/docs', '/docs');
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toMatch(/^text\/html/);
  for (const { name, operation } of operations()) expect({ name, named: page.text.includes(operation.summary) }).toEqual({ name, named: true });
});

test('when BASE_PATH and PUBLIC_BASE_URL are set, then the contract and its page are under BASE_PATH, and its server is PUBLIC_BASE_URL with it', async () => {
  // The test client's base URL ends with BASE_PATH.
  expect(nested.service.url).toMatch(/\/api$/);
  expect(parse((await nested.http.request('GET', '/openapi.yaml', '/openapi.yaml')).text)).toEqual(servedAt('https://videos.example.com/api'));
  const page = await nested.http.request('GET', '/docs', '/docs');
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toMatch(/^text\/html/);
  for (const { operation } of operations()) expect(page.text).toContain(operation.summary);
});

test('when /docs is opened in a browser, then it shows every operation, breaks no rule of its policy, and asks nothing of another host', async () => {
  // Tall enough for Redoc to render every section of its overview at once (it renders lazily).
  const page = await browser.newPage({ viewport: { width: 1280, height: 8000 } });
  const requested: string[] = [];
  const violations: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  // Reported from inside the page, where a blocked eval or inline style shows too, not only a blocked load.
  await page.exposeFunction('reportViolation', (violation: string) => violations.push(violation));
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (event) => reportViolation(`${event.violatedDirective} ${event.blockedURI}`))",
  );

  const answer = await page.goto(`${app.service.url}/docs`, { waitUntil: 'networkidle' });
  expect(answer?.status()).toBe(200);
  expect(answer?.headers()['content-security-policy']).toMatch(
    /^default-src 'none'; script-src 'sha256-[^;]+; style-src 'unsafe-inline'; img-src data:; font-src data:;/,
  );
  // Redoc renders after the page has loaded: an overview of every operation, by tag.
  const overview = await waitFor(
    'Redoc to render',
    async () => {
      const shown = await page.locator('body').innerText();
      return shown.includes('Operations') && !shown.includes('Loading...') ? shown : undefined;
    },
    15_000,
  );
  for (const { name, route, method } of operations().filter(({ route }) => route.startsWith('/')))
    expect({ name, shown: new RegExp(`${method.toUpperCase()}\\s+${route.replace(/[{}]/g, '\\$&')}\\s`).test(overview) }).toEqual({ name, shown: true });

  // Each tag, opened in the menu, lists its operations by their summaries.
  const menu = page.locator('.menu-content');
  for (const tag of new Set(operations().flatMap(({ operation }) => operation.tags))) {
    await menu.getByText(tag, { exact: true }).click();
    const listed = await waitFor(`the menu to open ${tag}`, async () => {
      const shown = await menu.innerText();
      return operations().every(({ operation }) => !operation.tags.includes(tag) || shown.includes(operation.summary)) && shown;
    });
    for (const { name, operation } of operations().filter(({ operation }) => operation.tags.includes(tag)))
      expect({ name, listed: listed.includes(operation.summary) }).toEqual({ name, listed: true });
  }
  // Search runs too (on the page's own thread: the policy allows no eval for its worker).
  // A click that comes before the trigger listens (a loaded machine) opens nothing: it is clicked until the dialog is there.
  const results = page.getByTestId('search-dialog');
  await waitFor('the search dialog to open', async () => {
    if (!(await results.isVisible())) await page.getByTestId('search-trigger').click();
    return results.isVisible();
  });
  await page.keyboard.type('cancel');
  await waitFor('search to find the cancel', async () => (await results.innerText()).includes('Cancel a download, or remove its file'));

  expect(requested.filter((url) => new URL(url).hostname !== '127.0.0.1')).toEqual([]);
  // Everything it shows comes inside the page itself.
  expect(requested).toEqual([`${app.service.url}/docs`]);
  expect(violations).toEqual([]);
  expect(errors).toEqual([]);
  await page.close();
});

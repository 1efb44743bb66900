import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Response } from 'supertest';
import { parse } from 'yaml';
import { projectRoot } from '../src/config/paths.ts';
import { DATABASE_ANSWER_MS } from '../src/db/deadline.ts';
import { whileLocked } from './support/database.ts';
import { bodyJson, type Download } from './support/api.ts';
import { createCollection } from './support/collections.ts';
import { openEventStream } from './support/event-stream.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { within } from './support/waiting.ts';

// Every operation while the database stalls: it neither fails nor answers, as under a lock held
// too long or a network that drops its packets. A lock on the tables the operations read, held by
// a transaction of this file's own, stalls them as such a database would; it is always rolled
// back, so that it never outlives its test.

const { app, source } = useService();
let download: Download;
let collectionId: string;
let subscriptionId: string;

beforeAll(async () => {
  const created = await app.http.createDownload({ url: source.file('/kept.mp4', mediaPath('clip.mp4')) });
  download = await app.waitForStatus((created.body as Download).id, ['completed']);
  const collection = await createCollection(app.http, { urls: [source.file('/child.mp4', mediaPath('clip.mp4'))] });
  expect(collection.status).toBe(202);
  collectionId = (collection.body as { id: string }).id;
  const subscription = await app.http.request('POST', '/subscriptions', '/subscriptions', { body: { url: source.file('/feed.mp4', mediaPath('clip.mp4')) } });
  expect(subscription.status).toBe(201);
  subscriptionId = (subscription.body as { id: string }).id;
}, 60_000);

/** Runs `during` while the tables are locked against every read. */
const whileStalled = <T>(during: () => Promise<T>): Promise<T> => whileLocked(app.config.databaseUrl, ['downloads', 'collections', 'subscriptions'], during);

/** Long enough for the bound on a loaded machine, far shorter than for ever. */
const ANSWER_MS = DATABASE_ANSWER_MS + 4_000;

type Operation = { name: string; send: () => Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body?: unknown }> };

function request(method: string, path: string, template: string, body?: unknown): () => Promise<Response> {
  return () => app.http.request(method, path, template, body === undefined ? {} : { body });
}

/** Each operation's request, made anew each time it is sent. */
function operations(): Operation[] {
  return [
    { name: 'GET /downloads/{id}', send: () => app.http.getDownload(download.id) },
    { name: 'GET /downloads', send: request('GET', '/downloads', '/downloads') },
    { name: 'POST /downloads', send: () => app.http.createDownload({ url: source.file('/new.mp4', mediaPath('clip.mp4')) }) },
    {
      name: 'the event stream of /downloads/{id}',
      send: async () => {
        const stream = await openEventStream(app.service.url, download.id);
        stream.close();
        return stream;
      },
    },
    { name: 'GET /collections', send: request('GET', '/collections', '/collections') },
    { name: 'GET /collections/{id}', send: request('GET', `/collections/${collectionId}`, '/collections/{collection_id}') },
    { name: 'POST /collections', send: request('POST', '/collections', '/collections', { urls: [source.file('/other.mp4', mediaPath('clip.mp4'))] }) },
    { name: 'GET /subscriptions', send: request('GET', '/subscriptions', '/subscriptions') },
    { name: 'GET /subscriptions/{id}', send: request('GET', `/subscriptions/${subscriptionId}`, '/subscriptions/{subscription_id}') },
    {
      name: 'PATCH /subscriptions/{id}',
      send: request('PATCH', `/subscriptions/${subscriptionId}`, '/subscriptions/{subscription_id}', { name: 'renamed' }),
    },
    // Last, so that the operations before it find the download as it was.
    { name: 'DELETE /downloads/{id}', send: request('DELETE', `/downloads/${download.id}`, '/downloads/{download_uuid}') },
  ];
}

test('when the database stalls, then every operation answers 503 problem+json with Retry-After within seconds, and answers again once it is back', async () => {
  await whileStalled(async () => {
    // Together, so that the bound is waited out once; each waits for the database on its own all the same.
    const answers = await Promise.all(
      operations().map(async ({ name, send }) => {
        const started = Date.now();
        const res = await within(ANSWER_MS, `${name} while the database stalls`, send());
        return { name, res, elapsed: Date.now() - started };
      }),
    );
    for (const { name, res, elapsed } of answers) {
      expect({ name, status: res.status }).toEqual({ name, status: 503 });
      expect({ name, retryAfter: Number(res.headers['retry-after']) > 0 }).toEqual({ name, retryAfter: true });
      expect({ name, type: res.headers['content-type'] }).toEqual({ name, type: expect.stringMatching(/^application\/problem\+json/) as unknown });
      // The service waited for the database as long as it allows.
      expect(elapsed).toBeGreaterThanOrEqual(DATABASE_ANSWER_MS - 100);
    }
    const detail = bodyJson<{ detail: string }>(answers[0]!.res as Response).detail;
    expect(detail).toMatch(/database/);
  });
  // Nothing the stalled requests asked for is kept: each answers as it would have.
  for (const { name, send } of operations()) {
    const res = await within(ANSWER_MS, `${name} once the database answers`, send());
    expect({ name, ok: res.status < 300 }).toEqual({ name, ok: true });
  }
}, 60_000);

test('when the contract says how long an operation waits for the database, then it is the bound the service keeps', async () => {
  type Responses = { components: { responses: Record<string, { description: string }> } };
  const spec = parse(await readFile(path.join(projectRoot, 'openapi.yaml'), 'utf8')) as Responses;
  expect(spec.components.responses.ServiceUnavailable!.description.replace(/\s+/g, ' ')).toContain(`within ${DATABASE_ANSWER_MS / 1000} seconds`);
});

import { stat } from 'node:fs/promises';
import { createClient, ProblemError, type Collection, type VideoDownloadClient } from '../src/client/index.ts';
import { startCuttingProxy, type CuttingProxy } from './support/cutting-proxy.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';

// The SDK's collections as a consumer uses them, against the real service and real sources: what
// it returns is typed from openapi.yaml and is what the service sent.

const { app, source } = useService();
let vds: VideoDownloadClient;
let cutter: CuttingProxy;

beforeAll(async () => {
  vds = createClient({ baseUrl: app.service.url });
  cutter = await startCuttingProxy(app.service.url, { cut: 'events' });
});

afterAll(async () => {
  await cutter?.close();
});

const FINAL = ['completed', 'failed', 'cancelled'];

test('when a batch is created and watched, then its counts arrive in order, the watch ends at completed, and children lists every child in its order', async () => {
  const clip = mediaPath('clip.mp4');
  const urls = [1, 2, 3].map((n) => source.file(`/sdk-batch/${n}.mp4`, clip));
  const created = await vds.collections.create({ urls, name: 'SDK batch' }, { idempotencyKey: 'sdk-collection-1' });
  expect(created).toMatchObject({ kind: 'batch', name: 'SDK batch', status: 'running', counts: { total: 3 } });

  const seen: Collection[] = [];
  for await (const collection of vds.collections.watch(created.id)) seen.push(collection);
  expect(seen.at(-1)).toMatchObject({ status: 'completed', counts: { total: 3, completed: 3 } });
  expect(seen.slice(0, -1).every((collection) => !FINAL.includes(collection.status))).toBe(true);
  // Completed children only ever grow.
  const completed = seen.map((collection) => collection.counts.completed);
  expect(completed).toEqual([...completed].sort((a, b) => a - b));
  expect(await vds.collections.get(created.id)).toEqual(seen.at(-1));

  const children = await vds.collections.children(created.id);
  expect(children.map((child) => [child.url, child.collection])).toEqual(urls.map((url, i) => [url, { id: created.id, index: i + 1 }]));
  for (const child of children) expect(child.file?.sha256).toBe(await sha256File(clip));

  // The same key and body again is the same collection; the list holds it.
  expect((await vds.collections.create({ urls, name: 'SDK batch' }, { idempotencyKey: 'sdk-collection-1' })).id).toBe(created.id);
  const page = await vds.collections.list({ status: ['completed'], limit: 100 });
  expect(page.items.map((item) => item.id)).toContain(created.id);
});

test('when a batch has 100 children, a whole page of the list, then children returns every one, in order', async () => {
  const urls = Array.from({ length: 100 }, (_, i) => source.url(`/sdk-many/${i}.mp4`));
  const created = await vds.collections.create({ urls });
  // Children go on while they are listed; stopping them keeps the test short. (More than 100 needs a url that expands to more.)
  await vds.collections.cancel(created.id);
  const children = await vds.collections.children(created.id);
  expect(children.map((child) => child.collection!.index)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
});

test('when a URL is previewed, then its entries come back and nothing is created', async () => {
  const url = source.file('/sdk-preview.mp4', mediaPath('clip.mp4'));
  const before = (await vds.collections.list({ limit: 100 })).items.length;
  const preview = await vds.collections.preview({ url, limit: 5 });
  expect(preview.entries).toEqual([expect.objectContaining({ index: 1, url })]);
  expect(preview.truncated).toBe(false);
  expect((await vds.collections.list({ limit: 100 })).items).toHaveLength(before);
});

test('when a running collection is cancelled, then watch ends at cancelled, its unfinished children are cancelled, and wait says so', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const urls = [1, 2, 3].map((n) => source.file(`/sdk-slow/${n}.mp4`, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 30) }));
  const created = await vds.collections.create({ urls });
  const statuses: string[] = [];
  for await (const collection of vds.collections.watch(created.id)) {
    statuses.push(collection.status);
    if (collection.counts.downloading > 0 && statuses.length < 100) expect((await vds.collections.cancel(created.id)).status).toBe('cancelled');
  }
  expect(statuses.at(-1)).toBe('cancelled');
  const done = await vds.collections.wait(created.id);
  expect(done.counts).toMatchObject({ total: 3, cancelled: 3 });
  expect((await vds.collections.children(created.id)).map((child) => child.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
});

test('when the event stream drops before the collection ends, then watch reconnects with Last-Event-ID and still ends at completed', async () => {
  const client = createClient({ baseUrl: cutter.url });
  const urls = [1, 2].map((n) => source.file(`/sdk-rewatched/${n}.mp4`, mediaPath('clip.mp4'), { script: [{ delayMs: 3_000 }] }));
  const created = await client.collections.create({ urls });
  const done = await client.collections.wait(created.id);
  expect(done).toMatchObject({ status: 'completed', counts: { completed: 2 } });
  expect(cutter.cutAfterEventId).toMatch(/^\d+$/);
  expect(cutter.requests.map((request) => request.lastEventId)).toEqual([undefined, cutter.cutAfterEventId]);
});

test('when the service refuses, then collections throw a ProblemError with its problem', async () => {
  const unknown = '00000000-0000-4000-8000-000000000000';
  await expect(vds.collections.get(unknown)).rejects.toMatchObject({ status: 404, problem: { detail: `No collection with id ${unknown}.` } });
  const watching = (async () => {
    for await (const collection of vds.collections.watch(unknown)) void collection;
  })();
  await expect(watching).rejects.toMatchObject({ status: 404, problem: { detail: `No collection with id ${unknown}.` } });
  await expect(vds.collections.cancel(unknown)).rejects.toBeInstanceOf(ProblemError);
  const both = (await vds.collections.create({ url: source.url('/a.mp4'), urls: [source.url('/b.mp4')] }).catch((error: unknown) => error)) as ProblemError;
  expect(both.status).toBe(400);
  expect(both.problem.errors?.map((error) => error.field)).toContain('/body');
});

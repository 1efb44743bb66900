import { randomUUID } from 'node:crypto';
import type { Download } from './support/api.ts';
import { createCollection, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';

// What a request for a collection may be, and whose a collection is: bad bodies change nothing,
// an Idempotency-Key makes one collection however many requests race, and with API_KEYS a
// collection is its key's and counts as one against MAX_ACTIVE_DOWNLOADS_PER_KEY.

const ALICE = 'alice-key-5d1c7e93b2a84f60';
const BOB = 'bob-key-8a2f40c1d7e9b356';
const ROOT = 'root-key-3e7b9d10f4c2a865';
const as = (key: string) => ({ Authorization: `Bearer ${key}` });
const ACTIVE_LIMIT = 2;

const { app, source } = useService({
  apiKeys: [ALICE, BOB],
  adminApiKeys: [ROOT],
  maxActiveDownloadsPerKey: ACTIVE_LIMIT,
  maxCollectionItems: 50,
  // The fixture server's address only: any other private address is refused.
  allowPrivateAddresses: ['127.0.0.1'],
});

async function collectionCount(): Promise<number> {
  const res = await app.http.request('GET', '/collections?limit=100', '/collections', { headers: as(ROOT) });
  expect(res.status).toBe(200);
  return (res.body as { items: Collection[] }).items.length;
}

describe('bad input', () => {
  const clip = () => source.file('/clip.mp4', mediaPath('clip.mp4'));
  const cases: [string, () => unknown, string][] = [
    ['both url and urls', () => ({ url: clip(), urls: [clip()] }), '/body'],
    ['neither url nor urls', () => ({ name: 'nothing' }), '/body'],
    ['101 URLs', () => ({ urls: Array.from({ length: 101 }, (_, i) => `${clip()}?${i}`) }), '/body/urls'],
    ['no URLs', () => ({ urls: [] }), '/body/urls'],
    ['limit 0', () => ({ url: clip(), limit: 0 }), '/body/limit'],
    ['limit over the server ceiling', () => ({ url: clip(), limit: 51 }), '/body/limit'],
    ['an entry beyond the limit', () => ({ url: clip(), limit: 3, entries: [4] }), '/body/entries'],
    ['entries with a batch', () => ({ urls: [clip()], entries: [1] }), '/body/entries'],
    ['an unknown field', () => ({ url: clip(), recursive: true }), '/body/recursive'],
    ['a bad URL inside urls', () => ({ urls: [clip(), 'ftp://example.com/a.mp4'] }), '/body/urls/1'],
    ['a private address inside urls', () => ({ urls: [clip(), 'http://10.0.0.7/a.mp4'] }), '/body/urls/1'],
    ['audio_format without mode audio', () => ({ urls: [clip()], audio_format: 'mp3' }), '/body/audio_format'],
  ];

  test.each(cases)('when the body has %s, then it is a 400 naming the field and nothing is created', async (_, body, field) => {
    const before = await collectionCount();
    const res = await createCollection(app.http, body(), as(ALICE));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const fields = (res.body as { errors?: { field: string }[] }).errors?.map((error) => error.field) ?? [];
    expect(fields.some((named) => named === field || named.startsWith(`${field}/`))).toBe(true);
    expect(await collectionCount()).toBe(before);
  });

  test('when a batch holds 100 URLs of 2,048 characters, the most the contract allows, then it is accepted, each URL a child', async () => {
    const clip = source.file('/long/clip.mp4', mediaPath('clip.mp4'));
    const urls = Array.from({ length: 100 }, (_, i) => `${clip}?${i}=`.padEnd(2048, 'x'));
    const res = await createCollection(app.http, { urls, name: 'Long links' }, as(ROOT));
    expect(res.status).toBe(202);
    const collection = res.body as Collection;
    expect(collection.counts.total).toBe(100);
    // Nothing of it is wanted beyond its making.
    await app.http.request('DELETE', `/collections/${collection.id}`, '/collections/{collection_id}', { headers: as(ROOT) });
    // The larger body is that operation's alone, and it has its own bound.
    expect((await createCollection(app.http, { urls, name: 'x'.repeat(300 * 1024) }, as(ROOT))).status).toBe(413);
    expect((await app.http.createDownload({ url: urls[0]!, filename: 'x'.repeat(16 * 1024) }, as(ROOT))).status).toBe(413);
  });

  test('when a preview asks for a URL with nothing at it, then it is a 422 with the error code and nothing is created', async () => {
    const before = await collectionCount();
    const res = await app.http.request('POST', '/collections/preview', '/collections/preview', {
      body: { url: source.status('/gone', 404) },
      headers: as(ALICE),
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ status: 422, code: 'source_http_error' });
    expect(await collectionCount()).toBe(before);
  });

  test('when an id is not a UUID or is unknown, then it is a 400 or a 404', async () => {
    expect((await app.http.request('GET', '/collections/nope', '/collections/{collection_id}', { headers: as(ALICE) })).status).toBe(400);
    expect((await app.http.request('GET', `/collections/${randomUUID()}`, '/collections/{collection_id}', { headers: as(ALICE) })).status).toBe(404);
    expect((await app.http.request('DELETE', `/collections/${randomUUID()}`, '/collections/{collection_id}', { headers: as(ALICE) })).status).toBe(404);
    expect((await app.http.request('GET', '/downloads?collection_id=nope', '/downloads', { headers: as(ALICE) })).status).toBe(400);
  });

  test('when there is no key, then every collection operation is a 401', async () => {
    expect((await createCollection(app.http, { urls: [source.file('/clip.mp4', mediaPath('clip.mp4'))] })).status).toBe(401);
    expect((await app.http.request('GET', '/collections', '/collections')).status).toBe(401);
  });
});

describe('idempotency', () => {
  test('when ten requests with one Idempotency-Key race, then one collection is made and every answer is it', async () => {
    const before = await collectionCount();
    const body = { urls: [source.file('/idem.mp4', mediaPath('clip.mp4'))] };
    const key = `idem-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 10 }, () => createCollection(app.http, body, { ...as(ROOT), 'Idempotency-Key': key })));
    expect(answers.map((res) => res.status)).toEqual(Array(10).fill(202));
    expect(new Set(answers.map((res) => (res.body as Collection).id)).size).toBe(1);
    expect(await collectionCount()).toBe(before + 1);
    const [collection] = answers.map((res) => res.body as Collection);
    const children = await app.http.request('GET', `/downloads?collection_id=${collection!.id}`, '/downloads', { headers: as(ROOT) });
    expect((children.body as { items: Download[] }).items).toHaveLength(1);

    const other = await createCollection(app.http, { ...body, name: 'other' }, { ...as(ROOT), 'Idempotency-Key': key });
    expect(other.status).toBe(409);
  });
});

describe('tenancy', () => {
  test("when a key reads, lists, follows or cancels another key's collection or its children, then it is as if there were none", async () => {
    const created = await createCollection(app.http, { urls: [source.file('/alice.mp4', mediaPath('clip.mp4'))] }, as(ALICE));
    expect(created.status).toBe(202);
    const collection = created.body as Collection;
    const asBob = { headers: as(BOB) };
    expect((await app.http.request('GET', `/collections/${collection.id}`, '/collections/{collection_id}', asBob)).status).toBe(404);
    expect((await app.http.request('DELETE', `/collections/${collection.id}`, '/collections/{collection_id}', asBob)).status).toBe(404);
    const bobs = await app.http.request('GET', '/collections', '/collections', asBob);
    expect((bobs.body as { items: Collection[] }).items.map((item) => item.id)).not.toContain(collection.id);
    const children = await app.http.request('GET', `/downloads?collection_id=${collection.id}`, '/downloads', asBob);
    expect(children.body).toEqual({ items: [], next_cursor: null });
    const alices = await app.http.request('GET', `/downloads?collection_id=${collection.id}`, '/downloads', { headers: as(ALICE) });
    expect((alices.body as { items: Download[] }).items).toHaveLength(1);
    expect((await app.http.request('GET', `/collections/${collection.id}`, '/collections/{collection_id}', { headers: as(ROOT) })).status).toBe(200);
  });

  test('when a key has a collection of many running, then it counts as one against MAX_ACTIVE_DOWNLOADS_PER_KEY', async () => {
    const slow = (name: string) => source.file(`/limit/${name}.mp4`, mediaPath('big.mp4'), { bytesPerSecond: 500_000 });
    const big = await createCollection(app.http, { urls: ['a', 'b', 'c', 'd', 'e'].map(slow) }, as(BOB));
    expect(big.status).toBe(202);
    // One more (a download) fits under the limit of two; then neither a download nor a collection does.
    expect((await app.http.createDownload({ url: slow('f') }, as(BOB))).status).toBe(202);
    const refused = await createCollection(app.http, { urls: [slow('g')] }, as(BOB));
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
    expect((await app.http.createDownload({ url: slow('h') }, as(BOB))).status).toBe(429);
    // Another key is not held by Bob's.
    expect((await createCollection(app.http, { urls: [slow('i')] }, as(ALICE))).status).toBe(202);

    const cancelled = await app.http.request('DELETE', `/collections/${(big.body as Collection).id}`, '/collections/{collection_id}', { headers: as(BOB) });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', counts: { total: 5, cancelled: 5 } });
    expect((await createCollection(app.http, { urls: [slow('j')] }, as(BOB))).status).toBe(202);
  });
});

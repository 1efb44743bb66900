import { randomBytes, randomUUID } from 'node:crypto';
import { useService } from './support/harness.ts';
import { checkNow, createSubscription, feedOn, patchSubscription, type Subscription } from './support/subscriptions.ts';

// What a request about subscriptions may be, and whose a subscription is: bad bodies are a 400
// naming the field and change nothing, one key follows a URL once, another key's subscriptions
// are not found, a key holds at most MAX_SUBSCRIPTIONS_PER_KEY, and lists page.

const ALICE = 'alice-key-6c2e91a7f3d04b85';
const BOB = 'bob-key-0f8d3b5a21c7e946';
const CAROL = 'carol-key-94ad07e2b6c1f358';
const ROOT = 'root-key-b1e5c7094a3d8f62';
const as = (key: string) => ({ Authorization: `Bearer ${key}` });
const MIN_INTERVAL = 900;
const MAX_ITEMS = 50;

const { app, source } = useService({
  apiKeys: [ALICE, BOB, CAROL],
  adminApiKeys: [ROOT],
  subscriptionMinIntervalSeconds: MIN_INTERVAL,
  maxSubscriptionsPerKey: 2,
  maxCollectionItems: MAX_ITEMS,
  // The fixture server's address only: any other private address is refused.
  allowPrivateAddresses: ['127.0.0.1'],
});

type Page = { items: Subscription[]; next_cursor: string | null };

async function list(key: string, query = 'limit=100'): Promise<Page> {
  const res = await app.http.request('GET', `/subscriptions?${query}`, '/subscriptions', { headers: as(key) });
  expect(res.status).toBe(200);
  return res.body as Page;
}

async function subscribe(key: string, body: Record<string, unknown>): Promise<Subscription> {
  const res = await createSubscription(app.http, body, as(key));
  if (res.status !== 201) throw new Error(`POST /subscriptions answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Subscription;
}

function expectFieldNamed(res: { status: number; headers: Record<string, string>; body: unknown }, field: string): void {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const fields = (res.body as { errors?: { field: string }[] }).errors?.map((error) => error.field) ?? [];
  expect(fields.some((named) => named === field || named.startsWith(`${field}/`))).toBe(true);
}

describe('bad input', () => {
  const feed = () => feedOn(source, 'bad', ['one']).url;
  const cases: [string, () => Record<string, unknown>, string][] = [
    [
      `an interval below SUBSCRIPTION_MIN_INTERVAL_SECONDS (${MIN_INTERVAL})`,
      () => ({ url: feed(), interval_seconds: MIN_INTERVAL - 1 }),
      '/body/interval_seconds',
    ],
    ['an interval of 0', () => ({ url: feed(), interval_seconds: 0 }), '/body/interval_seconds'],
    ['an unknown field', () => ({ url: feed(), recursive: true }), '/body/recursive'],
    ['no url', () => ({ interval_seconds: MIN_INTERVAL }), '/body/url'],
    ['a URL that is not http(s)', () => ({ url: 'ftp://media.example/feed.xml' }), '/body/url'],
    ['a URL to a private address not allowed', () => ({ url: 'http://10.0.0.7/feed.xml' }), '/body/url'],
    ['an archive line that is not "<extractor> <id>"', () => ({ url: feed(), archive: 'youtube abc\njustoneword\n' }), '/body/archive'],
    ['an archive line with a control character', () => ({ url: feed(), archive: 'youtube a\u0007b\n' }), '/body/archive'],
    // Refused as a line rather than failing as a key longer than the database can index.
    ['an archive id longer than any listed entry has', () => ({ url: feed(), archive: `youtube ${randomBytes(1500).toString('hex')}\n` }), '/body/archive'],
    [`a backfill above MAX_COLLECTION_ITEMS (${MAX_ITEMS})`, () => ({ url: feed(), backfill: MAX_ITEMS + 1 }), '/body/backfill'],
    ['a negative backfill', () => ({ url: feed(), backfill: -1 }), '/body/backfill'],
    ['an empty title_contains', () => ({ url: feed(), title_contains: '' }), '/body/title_contains'],
    ['audio_format without mode audio', () => ({ url: feed(), audio_format: 'mp3' }), '/body/audio_format'],
    ['a callback_url on a server without WEBHOOK_SECRET', () => ({ url: feed(), callback_url: 'https://hooks.example/in' }), '/body/callback_url'],
  ];

  test.each(cases)('when a create has %s, then it is a 400 naming the field and nothing is created', async (_, body, field) => {
    const res = await createSubscription(app.http, body(), as(ALICE));
    expectFieldNamed(res, field);
    expect((await list(ROOT)).items).toEqual([]);
  });

  describe('a change', () => {
    let subscription: Subscription;
    beforeAll(async () => {
      subscription = await subscribe(ALICE, { url: feedOn(source, 'patched', ['one']).url, interval_seconds: MIN_INTERVAL });
    });
    afterAll(async () => {
      await app.http.request('DELETE', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}', { headers: as(ALICE) });
    });

    const patches: [string, Record<string, unknown>, string][] = [
      ['an empty body', {}, '/body'],
      ['audio_format without mode audio', { audio_format: 'mp3' }, '/body/audio_format'],
      ['an interval below the minimum', { interval_seconds: MIN_INTERVAL - 1 }, '/body/interval_seconds'],
      ['an unknown field', { archive: 'youtube abc' }, '/body/archive'],
      ['enabled as text', { enabled: 'no' }, '/body/enabled'],
      ['a callback_url on a server without WEBHOOK_SECRET', { callback_url: 'https://hooks.example/in' }, '/body/callback_url'],
    ];

    test.each(patches)('when a PATCH has %s, then it is a 400 naming the field and the subscription is unchanged', async (_, body, field) => {
      const before = (await app.http.request('GET', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}', { headers: as(ALICE) }))
        .body as Subscription;
      expectFieldNamed(await patchSubscription(app.http, subscription.id, body, as(ALICE)), field);
      const after = (await app.http.request('GET', `/subscriptions/${subscription.id}`, '/subscriptions/{subscription_id}', { headers: as(ALICE) }))
        .body as Subscription;
      expect({ ...after, last_checked_at: null, next_check_at: null, seen_count: 0, name: null, extractor: null, updated_at: null }).toEqual({
        ...before,
        last_checked_at: null,
        next_check_at: null,
        seen_count: 0,
        name: null,
        extractor: null,
        updated_at: null,
      });
    });

    test('when a PATCH sets mode audio with audio_format, then it is accepted, and leaving audio drops the format', async () => {
      const audio = await patchSubscription(app.http, subscription.id, { mode: 'audio', audio_format: 'mp3' }, as(ALICE));
      expect(audio.status).toBe(200);
      expect((audio.body as Subscription).options).toMatchObject({ mode: 'audio', audio_format: 'mp3' });
      const video = await patchSubscription(app.http, subscription.id, { mode: 'video' }, as(ALICE));
      expect((video.body as Subscription).options).toMatchObject({ mode: 'video', audio_format: null });
    });
  });

  test('when a body is not JSON, then it is a 415 and nothing is created', async () => {
    const res = await createSubscription(app.http, 'url=http://127.0.0.1/feed.xml', { ...as(ALICE), 'Content-Type': 'text/plain' });
    expect(res.status).toBe(415);
    expect((await list(ROOT)).items).toEqual([]);
  });

  test('when a body is larger than the server takes, then it is a 413, and an archive longer than the contract allows a 400; nothing is created', async () => {
    const before = (await list(ROOT)).items.length;
    const url = feedOn(source, 'huge', []).url;
    // 8 MB: past the 7 MiB that the longest archive, written at its widest, needs.
    expect((await createSubscription(app.http, { url, archive: 'youtube abcdefghijk\n'.repeat(400_000) }, as(ALICE))).status).toBe(413);
    // 1.4 MB: within the body's limit, past the archive's 1,048,576 characters.
    expectFieldNamed(await createSubscription(app.http, { url, archive: 'youtube abcdefghijk\n'.repeat(70_000) }, as(ALICE)), '/body/archive');
    expect((await list(ROOT)).items).toHaveLength(before);
    // The longest archive with characters JSON writes as escapes, 6 bytes each, is taken.
    const wide = `feed ${'\u00e9'.repeat(500)}\n`.repeat(2000);
    expect(wide.length).toBeLessThanOrEqual(1_048_576);
    const body = JSON.stringify({ url, archive: wide }).replace(/\u00e9/g, '\\u00e9');
    const taken = await app.http.request('POST', '/subscriptions', '/subscriptions', { body, headers: { ...as(ALICE), 'content-type': 'application/json' } });
    expect(taken.status).toBe(201);
    expect(taken.body).toMatchObject({ seen_count: 1 });
  });

  test('when a cursor is not one the service gave, or an id not a UUID, then it is a 400; an unknown id is a 404', async () => {
    expectFieldNamed(await app.http.request('GET', '/subscriptions?cursor=not-a-cursor', '/subscriptions', { headers: as(ALICE) }), '/query/cursor');
    const template = '/subscriptions/{subscription_id}';
    expect((await app.http.request('GET', '/subscriptions/nope', template, { headers: as(ALICE) })).status).toBe(400);
    expect((await app.http.request('GET', `/subscriptions/${randomUUID()}`, template, { headers: as(ALICE) })).status).toBe(404);
    expect((await checkNow(app.http, randomUUID(), as(ALICE))).status).toBe(404);
  });

  test('when there is no key, then every subscription operation is a 401', async () => {
    expect((await createSubscription(app.http, { url: feedOn(source, 'nokey', []).url })).status).toBe(401);
    expect((await app.http.request('GET', '/subscriptions', '/subscriptions')).status).toBe(401);
    expect((await app.http.request('GET', `/subscriptions/${randomUUID()}`, '/subscriptions/{subscription_id}')).status).toBe(401);
  });
});

describe('one URL once', () => {
  test('when a key follows a URL it already follows, spelled differently, then it is a 409 naming the subscription; another key may follow it', async () => {
    const feed = feedOn(source, 'twice', ['one']);
    const first = await subscribe(BOB, { url: feed.url, interval_seconds: MIN_INTERVAL });
    const { host } = new URL(feed.url);
    for (const spelling of [feed.url, `HTTP://${host.toUpperCase()}/twice/feed.xml`, `http://${host}/twice/./feed.xml`]) {
      const again = await createSubscription(app.http, { url: spelling, interval_seconds: MIN_INTERVAL * 2 }, as(BOB));
      expect(again.status).toBe(409);
      expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(again.body).toMatchObject({ status: 409, subscription_id: first.id });
    }
    expect((await list(BOB)).items.map((item) => item.id)).toEqual([first.id]);

    const alices = await subscribe(ALICE, { url: feed.url, interval_seconds: MIN_INTERVAL });
    expect(alices.id).not.toBe(first.id);
    // Once deleted, the URL may be followed again.
    await app.http.request('DELETE', `/subscriptions/${first.id}`, '/subscriptions/{subscription_id}', { headers: as(BOB) });
    const renewed = await subscribe(BOB, { url: feed.url, interval_seconds: MIN_INTERVAL });
    for (const [key, id] of [
      [BOB, renewed.id],
      [ALICE, alices.id],
    ] as const) {
      await app.http.request('DELETE', `/subscriptions/${id}`, '/subscriptions/{subscription_id}', { headers: as(key) });
    }
  });
});

describe('keys', () => {
  test("when a key asks for another key's subscription, then every operation on it is a 404 and it is not in its list; an admin key sees it", async () => {
    const feed = feedOn(source, 'alices', ['one']);
    const subscription = await subscribe(ALICE, { url: feed.url, interval_seconds: MIN_INTERVAL });
    const path = `/subscriptions/${subscription.id}`;
    const bob = { headers: as(BOB) };
    expect((await app.http.request('GET', path, '/subscriptions/{subscription_id}', bob)).status).toBe(404);
    expect((await app.http.request('PATCH', path, '/subscriptions/{subscription_id}', { ...bob, body: { enabled: false } })).status).toBe(404);
    expect((await app.http.request('DELETE', path, '/subscriptions/{subscription_id}', bob)).status).toBe(404);
    expect((await checkNow(app.http, subscription.id, as(BOB))).status).toBe(404);
    expect((await app.http.request('GET', `${path}/archive`, '/subscriptions/{subscription_id}/archive', bob)).status).toBe(404);
    expect((await list(BOB)).items.map((item) => item.id)).not.toContain(subscription.id);

    // Still Alice's, unchanged by Bob's attempts.
    const alices = await app.http.request('GET', path, '/subscriptions/{subscription_id}', { headers: as(ALICE) });
    expect(alices.body).toMatchObject({ id: subscription.id, enabled: true });
    expect((await list(ALICE)).items.map((item) => item.id)).toContain(subscription.id);
    expect((await app.http.request('GET', path, '/subscriptions/{subscription_id}', { headers: as(ROOT) })).status).toBe(200);
    expect((await list(ROOT)).items.map((item) => item.id)).toContain(subscription.id);
    expect((await app.http.request('GET', `${path}/archive`, '/subscriptions/{subscription_id}/archive', { headers: as(ROOT) })).status).toBe(200);
    const paused = await app.http.request('PATCH', path, '/subscriptions/{subscription_id}', { headers: as(ROOT), body: { enabled: false } });
    expect(paused.body).toMatchObject({ status: 'paused' });
    expect((await app.http.request('DELETE', path, '/subscriptions/{subscription_id}', { headers: as(ROOT) })).status).toBe(200);
  });

  test('when a key holds MAX_SUBSCRIPTIONS_PER_KEY subscriptions, then a third is a 429 until one is deleted; an admin key is not held to it', async () => {
    const urls = [1, 2, 3].map((n) => feedOn(source, `limit-${n}`, ['one']).url);
    const held = [await subscribe(CAROL, { url: urls[0] }), await subscribe(CAROL, { url: urls[1] })];
    const refused = await createSubscription(app.http, { url: urls[2] }, as(CAROL));
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await list(CAROL)).items).toHaveLength(2);
    // A URL already followed is still named as such at the limit.
    expect((await createSubscription(app.http, { url: urls[0] }, as(CAROL))).status).toBe(409);

    await app.http.request('DELETE', `/subscriptions/${held[0]!.id}`, '/subscriptions/{subscription_id}', { headers: as(CAROL) });
    expect((await createSubscription(app.http, { url: urls[2] }, as(CAROL))).status).toBe(201);

    const roots = await Promise.all(urls.map((url) => createSubscription(app.http, { url }, as(ROOT))));
    expect(roots.map((res) => res.status)).toEqual([201, 201, 201]);
  });
});

describe('paging', () => {
  test('when the list is read a page at a time, then every subscription comes once, newest first, and the last page has no next_cursor', async () => {
    for (const n of [1, 2, 3, 4, 5]) await subscribe(ROOT, { url: feedOn(source, `paged-${n}`, []).url, name: `Paged ${n}` });
    const whole = (await list(ROOT)).items;
    expect(whole.length).toBeGreaterThanOrEqual(5);
    expect(whole.slice(0, 5).map((item) => item.name)).toEqual(['Paged 5', 'Paged 4', 'Paged 3', 'Paged 2', 'Paged 1']);

    const paged: Subscription[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await list(ROOT, `limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      expect(page.items.length).toBeGreaterThan(0);
      paged.push(...page.items);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(Math.ceil(whole.length / 2));
    expect(paged.map((item) => item.id)).toEqual(whole.map((item) => item.id));
  });
});

describe('archive bounds', () => {
  test('when an archive line is the longest taken, in four-byte characters, then it is stored and exported as given', async () => {
    const line = `${'\u{1F3B5}'.repeat(100)} ${'\u{1F3B6}'.repeat(500)}`;
    const subscription = await subscribe(ROOT, { url: feedOn(source, 'longest', []).url, archive: `${line}\n` });
    expect(subscription.seen_count).toBe(1);
    const exported = await app.http.request('GET', `/subscriptions/${subscription.id}/archive`, '/subscriptions/{subscription_id}/archive', {
      headers: as(ROOT),
    });
    expect(exported.text).toBe(`${line}\n`);
  });
});

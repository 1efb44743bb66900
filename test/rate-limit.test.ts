import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { FAILED_KEY_ATTEMPTS_PER_MINUTE } from '../src/http/rate-limit.ts';
import { startTestService, type TestService } from './support/api.ts';

// Clients are told apart by X-Forwarded-For (TRUST_PROXY=loopback, the test client being on
// loopback), so that each test has addresses, and so budgets, of its own on one service.

const UNKNOWN_ID = '6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11';
const randomBearer = () => ({ Authorization: `Bearer ${randomBytes(16).toString('hex')}` });

function read(app: TestService, address: string, headers: Record<string, string> = {}): Promise<Response> {
  return app.http.getDownload(UNKNOWN_ID, { 'X-Forwarded-For': address, ...headers });
}

async function statusesOf(requests: (() => Promise<Response>)[]): Promise<number[]> {
  const statuses: number[] = [];
  for (const request of requests) statuses.push((await request()).status);
  return statuses;
}

function expectTooMany(res: Response): void {
  expect(res.status).toBe(429);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
}

describe('without API_KEYS', () => {
  let app: TestService;
  beforeAll(async () => {
    app = await startTestService({ rateLimitPerMinute: 3, trustProxy: 'loopback' });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test('when a client goes over RATE_LIMIT_PER_MINUTE, then 429 with Retry-After and RateLimit headers', async () => {
    const statuses = await statusesOf([1, 2, 3].map(() => () => read(app, '198.51.100.1')));
    const last = await read(app, '198.51.100.1');
    expect(statuses).toEqual([404, 404, 404]);
    expectTooMany(last);
    expect(last.headers.ratelimit).toMatch(/r=0/);
  });

  test('when every request carries a bearer of its own, then they still share the address budget', async () => {
    const statuses = await statusesOf([1, 2, 3, 4].map(() => () => read(app, '198.51.100.2', randomBearer())));
    expect(statuses).toEqual([404, 404, 404, 429]);
  });

  test('when addresses share an IPv6 /56, then they share one budget, and the next /56 has its own', async () => {
    const statuses = await statusesOf(
      ['2001:db8:1:100::1', '2001:db8:1:1ff::2', '2001:db8:1:1a0::3', '2001:db8:1:1b0::4', '2001:db8:1:200::1'].map((address) => () => read(app, address)),
    );
    expect(statuses).toEqual([404, 404, 404, 429, 404]);
  });
});

describe('with API_KEYS', () => {
  let app: TestService;
  beforeAll(async () => {
    app = await startTestService({ apiKeys: ['key-a', 'key-b', 'key-c'], rateLimitPerMinute: 3, trustProxy: 'loopback' });
  });
  afterAll(async () => {
    await app?.stop();
  });

  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

  test('when a configured key is used, then it has one budget whatever the address, and another key has its own', async () => {
    const statuses = await statusesOf([
      () => read(app, '198.51.100.10', bearer('key-a')),
      () => read(app, '198.51.100.11', bearer('key-a')),
      () => read(app, '198.51.100.12', bearer('key-a')),
      () => read(app, '198.51.100.13', bearer('key-a')),
      () => read(app, '198.51.100.10', bearer('key-b')),
    ]);
    expect(statuses).toEqual([404, 404, 404, 429, 404]);
  });

  test('when bearers that are not keys are tried, then each is a 401 until the address has failed 10 times, then 429', async () => {
    const statuses = await statusesOf(Array.from({ length: FAILED_KEY_ATTEMPTS_PER_MINUTE }, () => () => read(app, '198.51.100.20', randomBearer())));
    expect(statuses).toEqual(Array(FAILED_KEY_ATTEMPTS_PER_MINUTE).fill(401));
    const over = await read(app, '198.51.100.20', randomBearer());
    expectTooMany(over);
    expect(over.headers['www-authenticate']).toBeUndefined();
    // Nor does a create get through, with a bearer or without.
    expect((await app.http.createDownload({ url: 'http://127.0.0.1/x.mp4' }, { 'X-Forwarded-For': '198.51.100.20' })).status).toBe(429);
    // Another address has failed nothing.
    expect((await read(app, '198.51.100.21', randomBearer())).status).toBe(401);
  });

  test('when an address has used up its failed attempts, then a configured key from it is refused too, and not from elsewhere', async () => {
    await statusesOf(Array.from({ length: FAILED_KEY_ATTEMPTS_PER_MINUTE }, () => () => read(app, '198.51.100.30')));
    expectTooMany(await read(app, '198.51.100.30', bearer('key-c')));
    expect((await read(app, '198.51.100.31', bearer('key-c'))).status).toBe(404);
  });

  test('when keys are guessed at /metrics, then the guesses count as failed attempts, and past the limit /metrics says nothing of a right one', async () => {
    const metrics = (address: string, headers: Record<string, string>) =>
      app.http.request('GET', '/metrics', '/metrics', { headers: { 'X-Forwarded-For': address, ...headers } });
    const statuses = await statusesOf(Array.from({ length: FAILED_KEY_ATTEMPTS_PER_MINUTE }, () => () => metrics('198.51.100.40', randomBearer())));
    expect(statuses).toEqual(Array(FAILED_KEY_ATTEMPTS_PER_MINUTE).fill(401));
    expectTooMany(await metrics('198.51.100.40', bearer('key-a')));
    expectTooMany(await read(app, '198.51.100.40', bearer('key-a')));
    expect((await metrics('198.51.100.41', bearer('key-a'))).status).toBe(200);
  });
});

describe('with API_KEYS and room for many requests', () => {
  let app: TestService;
  beforeAll(async () => {
    // No worker: the downloads it creates are never fetched (so no limit on those not yet ended).
    app = await startTestService({ role: 'api', apiKeys: ['busy-key'], rateLimitPerMinute: 1000, maxActiveDownloadsPerKey: 0 });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test('when a configured key makes many requests at once, then none of them counts as a failed attempt', async () => {
    const many = 5 * FAILED_KEY_ATTEMPTS_PER_MINUTE;
    // Creates, because each holds its request open for a transaction: all of them are running at once.
    const responses = await Promise.all(
      Array.from({ length: many }, (_, i) => app.http.createDownload({ url: `http://127.0.0.1:9/clip-${i}.mp4` }, { Authorization: 'Bearer busy-key' })),
    );
    expect(responses.map((res) => res.status)).toEqual(Array(many).fill(202));
    expect((await app.http.getDownload(UNKNOWN_ID, randomBearer())).status).toBe(401);
  });
});

describe('RATE_LIMIT_PER_MINUTE=0 with API_KEYS', () => {
  let app: TestService;
  beforeAll(async () => {
    app = await startTestService({ apiKeys: ['only-key'], rateLimitPerMinute: 0 });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test('when limits are off, then failed key attempts are not limited either', async () => {
    const statuses = await statusesOf(Array.from({ length: 2 * FAILED_KEY_ATTEMPTS_PER_MINUTE }, () => () => app.http.getDownload(UNKNOWN_ID, randomBearer())));
    expect(statuses).toEqual(Array(2 * FAILED_KEY_ATTEMPTS_PER_MINUTE).fill(401));
    expect((await app.http.getDownload(UNKNOWN_ID, { Authorization: 'Bearer only-key' })).status).toBe(404);
  });
});

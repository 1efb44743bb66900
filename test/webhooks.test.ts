import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { stat } from 'node:fs/promises';
import { Webhook } from 'standardwebhooks';
import type { components } from '../generated/api.ts';
import { startService, type Service } from '../src/service.ts';
import { createHttp, startTestService, type Download, type TestHttp, type TestService } from './support/api.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { query } from './support/queue.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';
import { webhookChecker } from './support/webhook-contract.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from './support/webhook-receiver.ts';

// Webhooks end to end: the real service, a real source, and a receiver on 127.0.0.1 that checks
// each delivery the way a client would, with the `standardwebhooks` package and the secret alone.

type WebhookEvent = components['schemas']['WebhookEvent'];
type Callback = NonNullable<Download['callback']>;

const BLOCKED = 'The callback address is private or loopback, which this server does not send webhooks to.';

/** A Standard Webhooks secret of the kind an operator makes with `openssl rand -base64 32`. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function signedHeaders(delivery: ReceivedWebhook): Record<string, string> {
  const pick = (name: string) => String(delivery.headers[name] ?? '');
  return { 'webhook-id': pick('webhook-id'), 'webhook-timestamp': pick('webhook-timestamp'), 'webhook-signature': pick('webhook-signature') };
}

/** What a receiver does first: check the signature; the event is only trusted after that. */
function verified(secret: string, delivery: ReceivedWebhook): WebhookEvent {
  return new Webhook(secret).verify(delivery.body, signedHeaders(delivery)) as WebhookEvent;
}

const checkDelivery = webhookChecker('downloadEnded');

async function getDownload(http: TestHttp, id: string): Promise<Download> {
  const res = await http.getDownload(id);
  expect(res.status).toBe(200);
  return res.body as Download;
}

/** Polls the download until its callback satisfies `done`. */
function waitForCallback(http: TestHttp, id: string, done: (callback: Callback) => boolean, timeoutMs = 30_000): Promise<Download> {
  return waitFor(
    `the callback of download ${id}`,
    async () => {
      const download = await getDownload(http, id);
      return download.callback !== null && done(download.callback) && download;
    },
    timeoutMs,
  );
}

const settled = (callback: Callback) => callback.state !== 'pending';

type WebhookJobRow = { state: string; retry_count: number; retry_limit: number };

function webhookJobs(databaseUrl: string, downloadId: string): Promise<WebhookJobRow[]> {
  return query<WebhookJobRow>(databaseUrl, "SELECT state, retry_count, retry_limit FROM pgboss.job WHERE name = 'webhook' AND data->>'download_id' = $1", [
    downloadId,
  ]);
}

async function create(app: TestService, body: Record<string, unknown>): Promise<Download> {
  const created = await app.http.createDownload(body);
  expect(created.status).toBe(202);
  return created.body as Download;
}

let source: FixtureServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  source = await startFixtureServer();
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.stop();
  await source?.close();
});

describe('deliveries', () => {
  const secret = newSecret();
  let app: TestService;

  beforeAll(async () => {
    app = await startTestService({ webhookSecret: secret, webhookRetryDelaySeconds: 1 });
  });

  afterAll(async () => {
    await app?.stop();
  });

  test('when a download with a callback_url completes, then the receiver gets one delivery that standardwebhooks verifies, holding the download as GET shows it, and the download shows it delivered', async () => {
    const callbackUrl = receiver.hook('/completed');
    const created = await create(app, { url: source.file('/completed.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    expect(created.callback).toEqual({ url: callbackUrl, state: 'pending', attempts: 0, last_error: null });

    const completed = await app.waitForStatus(created.id, ['completed']);
    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({ url: callbackUrl, state: 'delivered', attempts: 1, last_error: null });

    const deliveries = receiver.deliveriesTo('/completed');
    expect(deliveries).toHaveLength(1);
    const delivery = deliveries[0]!;
    expect(delivery.method).toBe('POST');
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['user-agent']).toMatch(/video-download-service/);
    expect(delivery.headers['webhook-id']).toMatch(/^msg_\w+$/);
    expect(Math.abs(Number(delivery.headers['webhook-timestamp']) - delivery.receivedAt / 1000)).toBeLessThan(5);
    checkDelivery(delivery);

    const event = verified(secret, delivery);
    // The signature is what makes the body trustworthy: another key, or a changed byte, fails it.
    expect(() => new Webhook(newSecret()).verify(delivery.body, signedHeaders(delivery))).toThrow();
    expect(() => new Webhook(secret).verify(delivery.body.replace('completed', 'failed'), signedHeaders(delivery))).toThrow();

    expect(event.type).toBe('download.completed');
    expect(Math.abs(Date.parse(event.timestamp) - Date.parse(completed.completed_at!))).toBeLessThan(5000);
    // The event shows the download as it ended; since then only its callback (and so its
    // updated_at) has moved on.
    const movedOn = { callback: null, updated_at: '' };
    expect({ ...event.data, ...movedOn }).toEqual({ ...shown, ...movedOn });
    expect(event.data.callback).toEqual({ url: callbackUrl, state: 'pending', attempts: 0, last_error: null });
    expect(event.data.download_url).toBe(`${app.service.url}/download/${completed.token}`);

    const jobs = await waitFor('the webhook job to complete', async () => {
      const rows = await webhookJobs(app.config.databaseUrl!, created.id);
      return rows.every((row) => row.state === 'completed') && rows;
    });
    expect(jobs).toEqual([{ state: 'completed', retry_count: 0, retry_limit: 11 }]);
  });

  test('when the receiver answers 500 twice, then it gets the same webhook-id and body three times, each signed, spaced by backoff, and the download shows delivered after 3 attempts', async () => {
    const callbackUrl = receiver.hook('/flaky', { failFirst: 2, failWith: 500 });
    const created = await create(app, { url: source.file('/flaky.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    await app.waitForStatus(created.id, ['completed']);

    // Between attempts the download says how the last one went, and that more are coming.
    const between = await waitForCallback(app.http, created.id, (callback) => callback.attempts >= 1);
    if (between.callback!.attempts < 3) {
      expect(between.callback).toMatchObject({ state: 'pending', last_error: 'The receiver answered 500.' });
    }

    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({ url: callbackUrl, state: 'delivered', attempts: 3, last_error: null });
    const deliveries = receiver.deliveriesTo('/flaky');
    expect(deliveries.map((delivery) => delivery.status)).toEqual([500, 500, 204]);
    const events = deliveries.map((delivery) => verified(secret, delivery));
    expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
    expect(new Set(deliveries.map((delivery) => delivery.body)).size).toBe(1);
    expect(events[0]!.type).toBe('download.completed');
    // retryDelay 1 s, doubling: the second retry waits at least about twice as long as the first did at least.
    const gaps = deliveries.slice(1).map((delivery, index) => delivery.receivedAt - deliveries[index]!.receivedAt);
    expect(gaps[0]).toBeGreaterThanOrEqual(900);
    expect(gaps[1]).toBeGreaterThanOrEqual(1900);
  });

  test('when a download fails (the source answers 404), then the webhook says download.failed with its error', async () => {
    const callbackUrl = receiver.hook('/failed');
    const created = await create(app, { url: source.status('/missing.mp4', 404), callback_url: callbackUrl });
    const failed = await app.waitForStatus(created.id, ['failed']);
    const [delivery] = await receiver.waitForDeliveries('/failed', 1);
    const event = verified(secret, delivery!);
    expect(event.type).toBe('download.failed');
    expect(event.data).toMatchObject({ id: created.id, status: 'failed', error: failed.error, download_url: null });
    expect(event.data.error?.code).toBe('source_http_error');
    expect((await waitForCallback(app.http, created.id, settled)).callback).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  test('when a running download is cancelled, then the webhook says download.cancelled', async () => {
    const size = (await stat(mediaPath('big.mp4'))).size;
    const url = source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 10) });
    const callbackUrl = receiver.hook('/cancelled');
    const created = await create(app, { url, callback_url: callbackUrl });
    await waitForProgress(app.http, created.id, 1);
    const cancelled = await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}');
    expect(cancelled.status).toBe(200);
    expect((cancelled.body as Download).status).toBe('cancelled');

    const [delivery] = await receiver.waitForDeliveries('/cancelled', 1);
    const event = verified(secret, delivery!);
    expect(event.type).toBe('download.cancelled');
    expect(event.data).toMatchObject({ id: created.id, status: 'cancelled', file: null, download_url: null });
    expect((await waitForCallback(app.http, created.id, settled)).callback).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(receiver.deliveriesTo('/cancelled')).toHaveLength(1);
  });
});

describe('a receiver that is down while the service restarts', () => {
  const secret = newSecret();
  let first: TestService;
  let second: Service | undefined;
  let down: WebhookReceiver;

  beforeAll(async () => {
    first = await startTestService({ webhookSecret: secret, webhookRetryDelaySeconds: 1 });
    down = await startWebhookReceiver();
  });

  afterAll(async () => {
    // The second service runs on the first one's database, which the first one's stop drops.
    await second?.stop();
    await first?.stop();
    await down?.stop();
  });

  test('when the receiver is down as the download ends and comes back while the service restarts, then the new service delivers the webhook', async () => {
    const callbackUrl = down.hook('/restart');
    await down.stop();
    const created = await create(first, { url: source.file('/restart.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    await first.waitForStatus(created.id, ['completed']);
    const tried = await waitForCallback(first.http, created.id, (callback) => callback.attempts >= 1);
    expect(tried.callback).toMatchObject({ state: 'pending', last_error: 'The connection to the receiver failed (ECONNREFUSED).' });

    await first.service.stop();
    await down.start();
    expect(down.deliveriesTo('/restart')).toHaveLength(0);
    second = await startService({ ...first.config, port: 0 });
    const http = createHttp(second.url);

    const [delivery] = await down.waitForDeliveries('/restart', 1, 30_000);
    const event = verified(secret, delivery!);
    expect(event).toMatchObject({ type: 'download.completed', data: { id: created.id, status: 'completed' } });
    const shown = await waitForCallback(http, created.id, settled);
    expect(shown.callback).toMatchObject({ state: 'delivered', last_error: null });
    expect(shown.callback!.attempts).toBeGreaterThanOrEqual(2);
    expect(down.deliveriesTo('/restart')).toHaveLength(1);
  });
});

describe('callback_url checks at create', () => {
  // API only: no worker runs, so a create that slipped through would still reach nothing.
  let guarded: TestService;
  let unsigned: TestService;

  beforeAll(async () => {
    guarded = await startTestService({ role: 'api', webhookSecret: newSecret(), allowPrivateAddresses: false });
    unsigned = await startTestService({ role: 'api' });
  });

  afterAll(async () => {
    await guarded?.stop();
    await unsigned?.stop();
  });

  async function listed(app: TestService): Promise<Download[]> {
    const res = await app.http.request('GET', '/downloads', '/downloads');
    expect(res.status).toBe(200);
    return (res.body as { items: Download[] }).items;
  }

  test('when the callback_url is private on its face, then the create is a 400 and nothing is created; a public one is accepted', async () => {
    const url = 'https://videos.example.com/clip.mp4';
    for (const callbackUrl of ['http://127.0.0.1:9/', 'http://[::1]:9/hook', 'http://localhost:9/hook', 'http://10.1.2.3/hook', 'http://2130706433/hook']) {
      const res = await guarded.http.createDownload({ url, callback_url: callbackUrl });
      expect({ callbackUrl, status: res.status }).toEqual({ callbackUrl, status: 400 });
      expect(res.body.detail).toMatch(/callback_url.*private or loopback/);
      expect(res.body.errors).toEqual([expect.objectContaining({ field: '/body/callback_url' })]);
    }
    expect(await listed(guarded)).toHaveLength(0);

    const accepted = await create(guarded, { url, callback_url: 'https://hooks.example.com/download-ended' });
    expect(accepted.callback).toEqual({ url: 'https://hooks.example.com/download-ended', state: 'pending', attempts: 0, last_error: null });
    expect((await listed(guarded)).map((download) => download.id)).toEqual([accepted.id]);
  });

  test('when the callback_url carries credentials, then the create is a 400: they would be shown to every reader of the download', async () => {
    const before = (await listed(guarded)).length;
    const res = await guarded.http.createDownload({ url: 'https://videos.example.com/clip.mp4', callback_url: 'https://user:secret@hooks.example.com/hook' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: '/body/callback_url', message: 'must not carry a user name or password' }]);
    expect(await listed(guarded)).toHaveLength(before);
  });

  test('when the callback_url has port 0, where nothing can listen, then the create is a 400', async () => {
    const res = await guarded.http.createDownload({ url: 'https://videos.example.com/clip.mp4', callback_url: 'https://hooks.example.com:0/hook' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: '/body/callback_url', message: 'must be an http(s) URL with a host' }]);
  });

  test('when the server has no WEBHOOK_SECRET, then a create with a callback_url is a 400 that names it, and nothing is created', async () => {
    const before = receiver.connections;
    const res = await unsigned.http.createDownload({ url: source.file('/unsigned.mp4', mediaPath('clip.mp4')), callback_url: receiver.hook('/unsigned') });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/WEBHOOK_SECRET/);
    expect(await listed(unsigned)).toHaveLength(0);
    expect(receiver.connections).toBe(before);

    // Without a callback_url the same server creates downloads as ever.
    const accepted = await create(unsigned, { url: source.file('/unsigned.mp4', mediaPath('clip.mp4')) });
    expect(accepted.callback).toBeNull();
  });
});

describe('the address policy when connecting', () => {
  const secret = newSecret();
  let app: TestService;

  beforeAll(async () => {
    // Loopback is allowed only as ::1, so 127.0.0.1 is refused wherever a connection would go.
    app = await startTestService({ webhookSecret: secret, webhookRetryDelaySeconds: 1, allowPrivateAddresses: ['::1'] });
  });

  afterAll(async () => {
    await app?.stop();
  });

  test('when the callback is a name that resolves to a refused address, then it passes the create but is never connected to, and the callback fails at once with the address sentence', async () => {
    const addresses = (await lookup('localhost', { all: true })).map((entry) => entry.address);
    if (!addresses.includes('127.0.0.1')) throw new Error(`this test needs localhost to resolve to 127.0.0.1 (it resolves to ${addresses.join(', ')})`);
    // The source is behind the same name, so the download fails at connect time too (blocked_address),
    // which ends it and sends its webhook: no source has to listen on ::1.
    const url = source.file('/policy.mp4', mediaPath('clip.mp4')).replace('//127.0.0.1:', '//localhost:');
    const callbackUrl = receiver.hook('/policy').replace('//127.0.0.1:', '//localhost:');
    const connectionsBefore = receiver.connections;

    const created = await create(app, { url, callback_url: callbackUrl });
    const failed = await app.waitForStatus(created.id, ['failed']);
    expect(failed.error?.code).toBe('blocked_address');
    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({ url: callbackUrl, state: 'failed', attempts: 1, last_error: BLOCKED });

    // Refused for good: no retry is spent on an address that will stay refused.
    const jobs = await waitFor('the webhook job to end', async () => {
      const rows = await webhookJobs(app.config.databaseUrl!, created.id);
      return rows.every((row) => row.state === 'failed') && rows;
    });
    expect(jobs).toEqual([{ state: 'failed', retry_count: 0, retry_limit: 11 }]);
    expect(receiver.connections).toBe(connectionsBefore);
    expect(receiver.deliveriesTo('/policy')).toHaveLength(0);
    expect(source.requestsFor('/policy.mp4')).toHaveLength(0);
  });
});

describe('with WEBHOOK_MAX_ATTEMPTS=2', () => {
  const secret = newSecret();
  let app: TestService;

  beforeAll(async () => {
    app = await startTestService({ webhookSecret: secret, webhookRetryDelaySeconds: 1, webhookMaxAttempts: 2 });
  });

  afterAll(async () => {
    await app?.stop();
  });

  test('when the receiver always answers 500 and WEBHOOK_MAX_ATTEMPTS is 2, then the callback ends failed after 2 attempts, naming the 500', async () => {
    const callbackUrl = receiver.hook('/always-500', { always: 500 });
    const created = await create(app, { url: source.file('/always-500.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    await app.waitForStatus(created.id, ['completed']);
    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({ url: callbackUrl, state: 'failed', attempts: 2, last_error: 'The receiver answered 500.' });

    const jobs = await waitFor('the webhook job to end', async () => {
      const rows = await webhookJobs(app.config.databaseUrl!, created.id);
      return rows.every((row) => row.state === 'failed') && rows;
    });
    expect(jobs).toEqual([{ state: 'failed', retry_count: 1, retry_limit: 1 }]);
    const deliveries = receiver.deliveriesTo('/always-500');
    expect(deliveries).toHaveLength(2);
    expect(deliveries.map((delivery) => verified(secret, delivery).type)).toEqual(['download.completed', 'download.completed']);
  });

  test('when the receiver does not answer, then the attempt ends after 10 seconds as a failure, and the retry delivers it', async () => {
    const callbackUrl = receiver.hook('/silent', { hangFirst: 1 });
    const created = await create(app, { url: source.file('/silent.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    await app.waitForStatus(created.id, ['completed']);
    const [held] = await receiver.waitForDeliveries('/silent', 1);
    const between = await waitForCallback(app.http, created.id, (callback) => callback.attempts >= 1);
    const waited = Date.now() - held!.receivedAt;
    expect(waited).toBeGreaterThanOrEqual(9_500);
    expect(waited).toBeLessThan(13_000);
    if (between.callback!.attempts === 1) {
      expect(between.callback).toMatchObject({ state: 'pending', last_error: 'The receiver did not answer within 10 seconds.' });
    }
    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({ url: callbackUrl, state: 'delivered', attempts: 2, last_error: null });
    const deliveries = receiver.deliveriesTo('/silent');
    expect(deliveries.map((delivery) => delivery.status)).toEqual([0, 204]);
    expect(deliveries[1]!.headers['webhook-id']).toBe(deliveries[0]!.headers['webhook-id']);
  });

  test('when receivers hang, then another receiver still gets its delivery at once', async () => {
    const hanging = await Promise.all(
      [1, 2, 3].map((n) => create(app, { url: source.url(`/hang-source-${n}.mp4`), callback_url: receiver.hook(`/hang-${n}`, { hangFirst: 1 }) })),
    );
    await Promise.all(hanging.map((_download, index) => receiver.waitForDeliveries(`/hang-${index + 1}`, 1)));
    const healthy = await create(app, { url: source.url('/healthy-source.mp4'), callback_url: receiver.hook('/healthy') });
    const started = Date.now();
    await receiver.waitForDeliveries('/healthy', 1);
    // Well inside the 10 s that the hanging deliveries are held.
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitForCallback(app.http, healthy.id, settled);
  });

  test('when the receiver redirects, then the redirect is not followed and counts as a failed attempt', async () => {
    const target = receiver.hook('/redirect-target');
    const callbackUrl = receiver.hook('/redirect', { always: 307, location: target });
    const created = await create(app, { url: source.file('/redirect.mp4', mediaPath('clip.mp4')), callback_url: callbackUrl });
    await app.waitForStatus(created.id, ['completed']);
    const shown = await waitForCallback(app.http, created.id, settled);
    expect(shown.callback).toEqual({
      url: callbackUrl,
      state: 'failed',
      attempts: 2,
      last_error: 'The receiver answered 307, a redirect, which webhooks do not follow.',
    });
    expect(receiver.deliveriesTo('/redirect')).toHaveLength(2);
    expect(receiver.deliveriesTo('/redirect-target')).toHaveLength(0);
  });
});

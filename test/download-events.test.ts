import { rm, stat } from 'node:fs/promises';
import { startService } from '../src/service.ts';
import { createHttp, makeDataDir, type Download, type DownloadStatus, type TestService } from './support/api.ts';
import { createTestDatabase } from './support/database.ts';
import { openEventStream, type DownloadEvent } from './support/event-stream.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess } from './support/service-process.ts';
import { waitFor, within } from './support/waiting.ts';

// GET /downloads/{id} with Accept: text/event-stream: the current state at once, then every change
// the database announces, until a final state.

const { app, source } = useService({ maxEventStreams: 3 }, { beforeStop: killServiceProcesses });
let bigSize: number;

beforeAll(async () => {
  bigSize = (await stat(mediaPath('big.mp4'))).size;
});

const ORDER: DownloadStatus[] = ['queued', 'downloading', 'processing', 'completed'];

/** The events of one download to completion, as a client sees them, in the order the contract allows. */
function expectOrderedToCompletion(events: DownloadEvent[], id: string): void {
  expect(events.every((event) => event.event === 'download' && event.download.id === id)).toBe(true);
  const ids = events.map((event) => Number(event.id));
  expect(ids.every((value, index) => Number.isInteger(value) && (index === 0 || value > ids[index - 1]!))).toBe(true);
  const ranks = events.map((event) => ORDER.indexOf(event.download.status));
  expect(ranks.every((rank, index) => rank >= 0 && (index === 0 || rank >= ranks[index - 1]!))).toBe(true);
  const bytes = events.map((event) => event.download.progress.downloaded_bytes);
  expect(bytes.every((value, index) => index === 0 || value >= bytes[index - 1]!)).toBe(true);
  expect(events.at(-1)!.download.status).toBe('completed');
  expect(events.filter((event) => event.download.status === 'completed')).toHaveLength(1);
}

async function createSlowDownload(base: TestService['http'], path: string, seconds: number): Promise<Download> {
  const url = source.file(path, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / seconds) });
  const created = await base.createDownload({ url });
  expect(created.status).toBe(202);
  return created.body as Download;
}

test('when a client follows a slow download, then the first event is its current state and the events go in order through downloading to completed, after which the stream ends', async () => {
  const created = await createSlowDownload(app.http, '/slow.mp4', 3);
  const stream = await openEventStream(app.service.url, created.id);
  expect(stream.status).toBe(200);
  expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
  const [first] = await stream.waitForEvents(1);
  expect(['queued', 'downloading']).toContain(first!.download.status);

  await within(30_000, 'the stream to end', stream.ended);
  const events = [...stream.events];
  expectOrderedToCompletion(events, created.id);
  // Progress was streamed on the way, not only the end points.
  const downloading = events.filter((event) => event.download.status === 'downloading');
  expect(new Set(downloading.map((event) => event.download.progress.downloaded_bytes)).size).toBeGreaterThanOrEqual(3);
  // Once processing, every byte is in, and the count says so (progress writes are throttled, and
  // the last one used to be left out).
  const processing = events.filter((event) => event.download.status === 'processing');
  expect(processing.length).toBeGreaterThan(0);
  for (const event of processing) expect(event.download.progress).toMatchObject({ downloaded_bytes: bigSize, total_bytes: bigSize, percent: 100 });
  // The final event is exactly what the JSON answer says.
  expect(events.at(-1)!.download).toEqual((await app.http.getDownload(created.id)).body);
});

test('when the download has already ended, then the stream sends its state once and ends', async () => {
  const created = await app.http.createDownload({ url: source.file('/ended.mp4', mediaPath('clip.mp4')) });
  const done = await app.waitForStatus(created.body.id as string, ['completed']);
  const stream = await openEventStream(app.service.url, done.id);
  await within(5_000, 'the stream to end', stream.ended);
  expect(stream.events.map((event) => event.download)).toEqual([done]);
  expect(stream.events[0]!.id).toBe('1');
});

test.each(['text/event-stream;charset=utf-8', 'text/event-stream; charset=UTF-8, application/json;q=0.5', 'TEXT/EVENT-STREAM'])(
  'when the Accept header is %s, then the answer is the event stream',
  async (accept) => {
    const created = await app.http.createDownload({ url: source.file(`/accept-${accept.length}.mp4`, mediaPath('clip.mp4')) });
    const done = await app.waitForStatus(created.body.id as string, ['completed']);
    const stream = await openEventStream(app.service.url, done.id, { Accept: accept });
    await within(5_000, 'the stream to end', stream.ended);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.events.map((event) => event.download)).toEqual([done]);
  },
);

test('when a client reconnects with Last-Event-ID, then the ids go on from it and the current state comes again', async () => {
  const created = await app.http.createDownload({ url: source.file('/again.mp4', mediaPath('clip.mp4')) });
  const done = await app.waitForStatus(created.body.id as string, ['completed']);
  const stream = await openEventStream(app.service.url, done.id, { 'Last-Event-ID': '41' });
  await within(5_000, 'the stream to end', stream.ended);
  expect(stream.events.map((event) => [event.id, event.download.status])).toEqual([['42', 'completed']]);
});

test.each(['1234567890123456', '9007199254740993', '1e3', '0x10', '-1', 'last'])(
  'when Last-Event-ID is %s (not 1 to 15 decimal digits), then the stream request is a 400 problem naming the header, not a stream',
  async (lastEventId) => {
    const res = await app.http.getDownload('00000000-0000-4000-8000-000000000000', { Accept: 'text/event-stream', 'Last-Event-ID': lastEventId });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((res.body as { errors: { field: string }[] }).errors.map((error) => error.field)).toEqual(['/headers/last-event-id']);
  },
);

test('when the process already holds MAX_EVENT_STREAMS streams, then one more is a 503 problem with Retry-After, and a closed one frees its place', async () => {
  const created = await createSlowDownload(app.http, '/held.mp4', 20);
  const open = await Promise.all([1, 2, 3].map(() => openEventStream(app.service.url, created.id)));
  expect(open.map((stream) => stream.status)).toEqual([200, 200, 200]);
  const refused = await openEventStream(app.service.url, created.id);
  expect(refused.status).toBe(503);
  expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  await refused.ended;
  // The JSON answer does not count against the streams.
  expect((await app.http.getDownload(created.id)).status).toBe(200);

  open[0]!.close();
  await open[0]!.ended;
  const again = await within(5_000, 'a stream after one closed', waitForAccepted(app.service.url, created.id));
  again.close();
  open.slice(1).forEach((stream) => stream.close());
  await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}');
});

test('when many streams are asked for at the same moment, then no more than MAX_EVENT_STREAMS are opened', async () => {
  const created = await createSlowDownload(app.http, '/burst.mp4', 20);
  const burst = await Promise.all(Array.from({ length: 30 }, () => openEventStream(app.service.url, created.id)));
  const accepted = burst.filter((stream) => stream.status === 200);
  expect(accepted).toHaveLength(3);
  expect(burst.filter((stream) => stream.status === 503)).toHaveLength(27);
  accepted.forEach((stream) => stream.close());
  await Promise.all(burst.map((stream) => stream.ended));
  await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}');
});

test('when clients hang up while their stream is being opened, then their places come back', async () => {
  const created = await createSlowDownload(app.http, '/hangups.mp4', 20);
  const url = `${app.service.url}/downloads/${created.id}`;
  for (let round = 0; round < 10; round++) {
    await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        fetch(url, { headers: { Accept: 'text/event-stream' }, signal: AbortSignal.timeout(1 + ((round + index) % 8)) })
          .then((res) => res.body?.cancel())
          .catch(() => {}),
      ),
    );
  }
  // The service notices each hang-up when its socket closes, which a loaded machine takes a while to
  // tell it: all three places must come back within seconds, not at a fixed moment.
  const open = await waitFor(
    'three places again',
    async () => {
      const tried = await Promise.all([1, 2, 3].map(() => openEventStream(app.service.url, created.id)));
      if (tried.every((stream) => stream.status === 200)) return tried;
      tried.forEach((stream) => stream.close());
      await Promise.all(tried.map((stream) => stream.ended));
      return undefined;
    },
    10_000,
  );
  expect(open.map((stream) => stream.status)).toEqual([200, 200, 200]);
  open.forEach((stream) => stream.close());
  await Promise.all(open.map((stream) => stream.ended));
  await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}');
});

test('when Last-Event-ID is the largest the contract takes (15 digits), then the next id is one more', async () => {
  const created = await app.http.createDownload({ url: source.file('/ids-largest.mp4', mediaPath('clip.mp4')) });
  const done = await app.waitForStatus(created.body.id as string, ['completed']);
  const stream = await openEventStream(app.service.url, done.id, { 'Last-Event-ID': '999999999999999' });
  await within(5_000, 'the stream to end', stream.ended);
  expect(stream.events.map((event) => event.id)).toEqual(['1000000000000000']);
});

async function waitForAccepted(url: string, id: string) {
  for (;;) {
    const stream = await openEventStream(url, id);
    if (stream.status === 200) return stream;
    await stream.ended;
  }
}

test('when a stream stays open for 15 seconds, then a comment line comes to keep proxies from closing it', async () => {
  const created = await createSlowDownload(app.http, '/quiet.mp4', 60);
  const opened = Date.now();
  const stream = await openEventStream(app.service.url, created.id);
  await stream.waitForEvents(1);
  await waitFor('a keep-alive comment', () => stream.comments > 0, 20_000);
  // After about 15 s of quiet, not at once: a comment sent early would prove nothing of the interval.
  expect(Date.now() - opened).toBeGreaterThan(14_000);
  stream.close();
  await app.http.request('DELETE', `/downloads/${created.id}`, '/downloads/{download_uuid}');
}, 30_000);

test('when the id is unknown or not a UUID, then the stream request is a problem, not a stream', async () => {
  const unknown = await openEventStream(app.service.url, '00000000-0000-4000-8000-000000000000');
  expect(unknown.status).toBe(404);
  await unknown.ended;
  const bad = await openEventStream(app.service.url, 'not-a-uuid');
  expect(bad.status).toBe(400);
  await bad.ended;
});

test('when the service shuts down, then its open streams end', async () => {
  const database = await createTestDatabase();
  const dataDir = await makeDataDir();
  try {
    const service = await startService({ ...app.config, databaseUrl: database.url, dataDir, role: 'api' });
    const created = await createHttp(service.url).createDownload({ url: source.file('/never.mp4', mediaPath('clip.mp4')) });
    const stream = await openEventStream(service.url, created.body.id as string);
    await stream.waitForEvents(1);
    await within(15_000, 'the service to stop', service.stop());
    await within(1_000, 'the stream to end', stream.ended);
    expect(stream.events.map((event) => event.download.status)).toEqual(['queued']);
  } finally {
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('when the API and the worker run in two processes, then the API process streams what the worker does, in order, to completed', async () => {
  const database = await createTestDatabase();
  const dataDir = await makeDataDir();
  try {
    const env = { DATABASE_URL: database.url, DATA_DIR: dataDir, ALLOW_PRIVATE_ADDRESSES: 'true', RATE_LIMIT_PER_MINUTE: '0' };
    const api = await spawnServiceProcess({ ...env, ROLE: 'api' });
    const created = await createSlowDownload(api.http, '/two-processes.mp4', 3);
    const stream = await openEventStream(api.url, created.id);
    await stream.waitForEvents(1);
    expect(stream.events[0]!.download.status).toBe('queued');
    await spawnServiceProcess({ ...env, ROLE: 'worker' });
    await within(60_000, 'the stream to end', stream.ended);
    expectOrderedToCompletion([...stream.events], created.id);
    expect(stream.events.some((event) => event.download.status === 'downloading')).toBe(true);
  } finally {
    await killServiceProcesses();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

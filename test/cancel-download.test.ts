import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { resolveFfmpegPath } from '../src/media/ffmpeg.ts';
import type { Download } from './support/api.ts';
import { openEventStream } from './support/event-stream.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { waitFor, waitForProgress, within } from './support/waiting.ts';

// DELETE /downloads/{id}: the API runs in this process, the downloads in a worker process of their
// own, so a cancel has to reach the worker through the database.

const { app, source } = useService({ role: 'api', maxAttempts: 5 }, { beforeStop: killServiceProcesses });
let worker: ServiceProcess | undefined;
let toolDir: string;
let bigSize: number;

/** Downloads that race their cancel in the race test. */
const RACERS = 12;

beforeAll(async () => {
  bigSize = (await stat(mediaPath('big.mp4'))).size;
  // An ffmpeg that takes a second longer to start, so that `processing` lasts long enough to be met.
  toolDir = await mkdtemp(path.join(os.tmpdir(), 'vds-slow-ffmpeg-'));
  await writeFile(path.join(toolDir, 'ffmpeg'), `#!/bin/sh\nsleep 1\nexec '${await resolveFfmpegPath(undefined)}' "$@"\n`);
  await chmod(path.join(toolDir, 'ffmpeg'), 0o755);
});

afterAll(async () => {
  if (toolDir) await rm(toolDir, { recursive: true, force: true });
});

async function startWorker(): Promise<ServiceProcess> {
  worker ??= await spawnServiceProcess({
    ROLE: 'worker',
    DATABASE_URL: app.config.databaseUrl!,
    DATA_DIR: app.config.dataDir,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    RETRY_DELAY_SECONDS: '1',
    FFMPEG_PATH: path.join(toolDir, 'ffmpeg'),
    // Every download of the race runs at once, so that none waits for a slot behind the others.
    WORKER_CONCURRENCY: String(RACERS),
  });
  return worker;
}

function cancel(id: string) {
  return app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
}

async function create(url: string): Promise<Download> {
  const created = await app.http.createDownload({ url });
  expect(created.status).toBe(202);
  return created.body as Download;
}

const partialDir = (id: string) => path.join(app.config.dataDir, 'partial', id);
const storedFile = (id: string) => path.join(app.config.dataDir, 'files', id);

test('when a queued download is cancelled, then it is cancelled, a second DELETE changes nothing, and no worker ever fetches it', async () => {
  const url = source.file('/queued.mp4', mediaPath('clip.mp4'));
  const created = await create(url);
  const first = await cancel(created.id);
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ id: created.id, status: 'cancelled', token: null, download_url: null, file: null });
  const second = await cancel(created.id);
  expect(second.body).toEqual(first.body);

  await startWorker();
  await sleep(3_000);
  expect(source.requestsFor('/queued.mp4')).toHaveLength(0);
  expect((await app.http.getDownload(created.id)).body).toEqual(first.body);
});

test('when a download running in another process is cancelled, then that process stops fetching within seconds and its partial file goes', async () => {
  await startWorker();
  const url = source.file('/running.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(bigSize / 10) });
  const created = await create(url);
  await waitForProgress(app.http, created.id, bigSize / 10);
  expect(existsSync(partialDir(created.id))).toBe(true);

  const cancelledAt = Date.now();
  const answer = await cancel(created.id);
  expect(answer.body).toMatchObject({ status: 'cancelled', token: null, file: null });
  const [request] = source.requestsFor('/running.mp4');
  await waitFor('the source connection to be dropped', () => request!.outcome !== undefined, 5_000);
  expect(request!.outcome).toBe('aborted');
  expect(Date.now() - cancelledAt).toBeLessThan(3_000);
  await waitFor('the partial file to go', () => !existsSync(partialDir(created.id)), 5_000);

  await sleep(3_000);
  expect(source.requestsFor('/running.mp4')).toHaveLength(1);
  expect((await app.http.getDownload(created.id)).body).toMatchObject({ status: 'cancelled' });
  expect(existsSync(storedFile(created.id))).toBe(false);
});

test('when a download is cancelled while ffmpeg processes it, then it ends cancelled, with no file stored and nothing left behind', async () => {
  await startWorker();
  const created = await create(source.file('/processing.mp4', mediaPath('clip.mp4')));
  const stream = await openEventStream(app.service.url, created.id);
  await waitFor('the download to reach processing', () => stream.events.some((event) => event.download.status === 'processing'), 20_000);
  const answer = await cancel(created.id);
  expect(answer.body).toMatchObject({ status: 'cancelled' });
  await within(5_000, 'the stream to end', stream.ended);
  expect(stream.events.at(-1)!.download.status).toBe('cancelled');

  await waitFor('the partial files to go', () => !existsSync(partialDir(created.id)), 5_000);
  await sleep(2_000);
  expect((await app.http.getDownload(created.id)).body).toMatchObject({ status: 'cancelled', token: null });
  expect(existsSync(storedFile(created.id))).toBe(false);
});

test('when a completed download is deleted, then its file goes, it is expired, and its token answers 410', async () => {
  await startWorker();
  const created = await create(source.file('/completed.mp4', mediaPath('clip.mp4')));
  const done = await app.waitForStatus(created.id, ['completed']);
  expect((await app.http.getFile(done.download_url!)).status).toBe(200);

  const answer = await cancel(created.id);
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ status: 'expired', token: null, download_url: null });
  expect(Date.parse((answer.body as Download).expires_at!)).toBeLessThanOrEqual(Date.now());
  expect(existsSync(storedFile(created.id))).toBe(false);
  expect((await app.http.getFile(done.token!)).status).toBe(410);
  expect((await app.http.headFile(done.token!)).status).toBe(410);
  expect((await cancel(created.id)).body).toEqual(answer.body);
});

test('when a completed download is deleted while its file is being fetched over and over, then every request that starts after DELETE answers gets 410', async () => {
  await startWorker();
  const created = await create(source.file('/fetched.mp4', mediaPath('clip.mp4')));
  const done = await app.waitForStatus(created.id, ['completed']);
  const requests: { startedAt: number; status: number }[] = [];
  let answeredAt = Infinity;
  const fetchUntil = async (stopAt: () => number) => {
    while (Date.now() < stopAt()) {
      const startedAt = Date.now();
      const { status } = await app.http.getFile(done.token!, { Range: 'bytes=0-0' });
      requests.push({ startedAt, status });
    }
  };
  const clients = Array.from({ length: 6 }, () => fetchUntil(() => answeredAt + 1_500));
  await sleep(300);
  expect((await cancel(created.id)).body).toMatchObject({ status: 'expired' });
  answeredAt = Date.now();
  await Promise.all(clients);
  const after = requests.filter((request) => request.startedAt > answeredAt);
  expect(after.length).toBeGreaterThan(10);
  expect(after.filter((request) => request.status !== 410)).toEqual([]);
});

test('when a download waiting for its retry is cancelled, then the retry never runs', async () => {
  await startWorker();
  const url = source.route('/retry.mp4', (_req, res) => {
    res.writeHead(503, { 'Content-Type': 'text/plain', 'Retry-After': '1' });
    res.end('busy');
  });
  const created = await create(url);
  await waitFor(
    'the first attempt to fail into a retry',
    async () => {
      const seen = (await app.http.getDownload(created.id)).body as Download;
      return seen.status === 'queued' && seen.attempts === 1 && seen.error?.code === 'source_http_error';
    },
    15_000,
  );
  expect((await cancel(created.id)).body).toMatchObject({ status: 'cancelled', attempts: 1 });
  await sleep(5_000);
  expect(source.requestsFor('/retry.mp4')).toHaveLength(1);
  expect((await app.http.getDownload(created.id)).body).toMatchObject({ status: 'cancelled', attempts: 1 });
});

test('when cancels race completions, then each download ends either cancelled with no file or expired with its file gone, and stays so', async () => {
  await startWorker();
  const url = source.file('/race.mp4', mediaPath('clip.mp4'));
  // Each cancel lands a little later in `processing` than the one before (which lasts a second
  // with the slow ffmpeg), so the early ones meet a running download and the late ones a completed
  // one. The last waits for its completion, so that both outcomes occur on a machine of any speed.
  const answers = await Promise.all(
    Array.from({ length: RACERS }, async (_, index) => {
      const created = await create(url);
      const stream = await openEventStream(app.service.url, created.id);
      await waitFor('processing', () => stream.events.some((event) => event.download.status === 'processing'), 60_000);
      if (index < RACERS - 1) await sleep(index * 200);
      else await waitFor('completed', () => stream.events.some((event) => event.download.status === 'completed'), 60_000);
      const answer = (await cancel(created.id)).body as Download;
      await within(5_000, 'the stream to end', stream.ended);
      return answer;
    }),
  );
  await sleep(3_000);
  const outcomes = new Set<string>();
  for (const answer of answers) {
    const now = (await app.http.getDownload(answer.id)).body as Download;
    expect(['cancelled', 'expired']).toContain(now.status);
    // What DELETE answered is what stands: nothing changed it afterwards.
    expect(now).toEqual(answer);
    expect(existsSync(storedFile(now.id))).toBe(false);
    expect(existsSync(partialDir(now.id))).toBe(false);
    if (now.status === 'cancelled') expect(now).toMatchObject({ file: null, token: null, completed_at: null });
    else expect(now.completed_at).not.toBeNull();
    outcomes.add(now.status);
  }
  expect(outcomes).toEqual(new Set(['cancelled', 'expired']));
}, 120_000);

test('when the id is unknown or not a UUID, then DELETE is a 404 or a 400 problem', async () => {
  const unknown = await cancel('00000000-0000-4000-8000-000000000000');
  expect(unknown.status).toBe(404);
  expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect((await cancel('nope')).status).toBe(400);
});

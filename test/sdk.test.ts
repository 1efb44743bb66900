import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createClient, ProblemError, type Download, type VideoDownloadClient } from '../src/client/index.ts';
import { probe } from '../src/media/probe.ts';
import { startTestService } from './support/api.ts';
import { startCuttingProxy, type CutOptions, type CuttingProxy } from './support/cutting-proxy.ts';
import { openEventStream } from './support/event-stream.ts';
import { resolveFfmpeg } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';

// The SDK as a consumer uses it, against the real service and real sources: every answer it
// returns is typed from openapi.yaml, and what it reads here is also what the service sent.

const { app, source } = useService();
let proxy: CuttingProxy;
let vds: VideoDownloadClient;
let work: string;
const proxies: CuttingProxy[] = [];

beforeAll(async () => {
  proxy = await startCuttingProxy(app.service.url, { cut: 'file' });
  vds = createClient({ baseUrl: proxy.url });
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-sdk-'));
});

afterAll(async () => {
  await Promise.all([proxy, ...proxies].map((started) => started?.close()));
  if (work) await rm(work, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A client whose connections go through a proxy of their own, cutting as `options` say. */
async function clientThrough(options: CutOptions): Promise<{ client: VideoDownloadClient; cutter: CuttingProxy }> {
  const cutter = await startCuttingProxy(app.service.url, options);
  proxies.push(cutter);
  return { client: createClient({ baseUrl: cutter.url }), cutter };
}

test('when a download is created and watched, then its states arrive in order and the watch ends at completed', async () => {
  const created = await vds.create({ url: source.file('/watched.mp4', mediaPath('clip.mp4')) }, { idempotencyKey: 'sdk-watch-1' });
  expect(created.status).toBe('queued');
  const seen: Download[] = [];
  for await (const snapshot of vds.watch(created.id)) seen.push(snapshot);
  const statuses = seen.map((snapshot) => snapshot.status).filter((status, index, all) => status !== all[index - 1]);
  const order = ['queued', 'downloading', 'processing', 'completed'];
  expect(statuses.at(-1)).toBe('completed');
  expect(statuses.map((status) => order.indexOf(status))).toEqual([...statuses.map((status) => order.indexOf(status))].sort());
  expect(await vds.get(created.id)).toEqual(seen.at(-1));
  // The same key and body again is the same download.
  expect((await vds.create({ url: created.url }, { idempotencyKey: 'sdk-watch-1' })).id).toBe(created.id);
  const page = await vds.list({ status: ['completed'], limit: 100 });
  expect(page.items.map((item) => item.id)).toContain(created.id);
});

test('when a clip is asked for through the SDK, then the download echoes it, and its file and what save writes last about that long', async () => {
  // Straight to the service: the shared proxy's one cut and its record of requests are the next test's.
  const direct = createClient({ baseUrl: app.service.url });
  const clip = { start_seconds: 3, end_seconds: 5.5 };
  const created = await direct.create({ url: source.file('/sdk-clip.mp4', mediaPath('keyframes.mp4')), clip });
  expect(created.clip).toEqual(clip);
  const done = await direct.wait(created.id);
  expect(done.clip).toEqual(clip);
  // A keyframe every second: the cut starts at 3 s itself, and keeps the 2.5 s asked for.
  expect(done.file!.duration_seconds).toBeGreaterThanOrEqual(2.5);
  expect(done.file!.duration_seconds).toBeLessThan(2.7);
  const saved = await direct.save(created.id, path.join(work, 'clip.mp4'));
  expect((await probe({ ffmpeg: await resolveFfmpeg(), file: saved.path })).durationSeconds).toBeCloseTo(done.file!.duration_seconds!, 1);
});

test('when the file connection is cut half-way, then save resumes with Range and the saved file is the source, byte for byte', async () => {
  const original = await readFile(mediaPath('big.mp4'));
  const created = await vds.create({ url: source.file('/saved.mp4', mediaPath('big.mp4')) });
  const target = path.join(work, 'saved.mp4');
  const progress: number[] = [];
  const saved = await vds.save(created.id, target, { onBytes: ({ received_bytes }) => progress.push(received_bytes) });

  const written = await readFile(target);
  // A faststart MP4 is stored as the source sent it.
  expect(written.equals(original)).toBe(true);
  expect(saved).toEqual({ path: target, size_bytes: written.length, sha256: sha256(written) });
  expect(saved.sha256).toBe((await vds.get(created.id)).file!.sha256);
  expect(proxy.cutAfter).toBeGreaterThan(0);
  expect(proxy.requests).toHaveLength(2);
  expect(proxy.requests[0]!.range).toBeUndefined();
  // The resume asks for the rest of what reached the file: at most what the proxy let through
  // (bytes in flight when a connection dies may never reach the reader).
  expect(proxy.requests[1]).toMatchObject({ range: expect.stringMatching(/^bytes=\d+-$/), ifRange: `"${saved.sha256}"` });
  const resumedAt = Number(/\d+/.exec(proxy.requests[1]!.range!)![0]);
  expect(resumedAt).toBeGreaterThan(0);
  expect(resumedAt).toBeLessThanOrEqual(proxy.cutAfter!);
  expect(progress.at(-1)).toBe(written.length);
  await expect(stat(`${target}.part`)).rejects.toThrow();
});

test('when the event stream drops before the download ends, then watch reconnects with Last-Event-ID and still ends at completed', async () => {
  const { client, cutter } = await clientThrough({ cut: 'events' });
  // The source holds its answer back, so the download stands still, downloading, across the cut
  // and the reconnect a second later: the server then sends the same state again.
  const created = await client.create({ url: source.file('/rewatched.mp4', mediaPath('clip.mp4'), { script: [{ delayMs: 3_000 }] }) });
  await app.waitForStatus(created.id, ['downloading']);
  const seen: Download[] = [];
  for await (const snapshot of client.watch(created.id)) seen.push(snapshot);

  expect(seen[0]?.status).toBe('downloading');
  expect(seen.at(-1)?.status).toBe('completed');
  expect(cutter.cutAfterEventId).toMatch(/^\d+$/);
  expect(cutter.requests.map((request) => request.lastEventId)).toEqual([undefined, cutter.cutAfterEventId]);
  // That state again is not yielded twice.
  seen.slice(1).forEach((snapshot, index) => expect(snapshot).not.toEqual(seen[index]));
});

test('when the service refuses connections for a while after the stream drops (a restart), then watch keeps trying and still ends at completed', async () => {
  let refusing: Promise<void> | undefined;
  const { client, cutter } = await clientThrough({
    cut: 'events',
    // Nothing listens from the cut until 4 s later: the first reconnects are refused outright.
    onCut: async () => {
      refusing = cutter.refuse(4_000);
      await refusing;
    },
  });
  const created = await client.create({ url: source.file('/refused.mp4', mediaPath('clip.mp4'), { script: [{ delayMs: 2_000 }] }) });
  await app.waitForStatus(created.id, ['downloading']);
  const seen: Download[] = [];
  for await (const snapshot of client.watch(created.id)) seen.push(snapshot);

  expect(refusing).toBeDefined();
  expect(seen[0]?.status).toBe('downloading');
  expect(seen.at(-1)?.status).toBe('completed');
  expect(cutter.requests.map((request) => request.lastEventId)).toEqual([undefined, cutter.cutAfterEventId]);
}, 30_000);

test('when the service is at its limit of event streams, then watch waits out its Retry-After and follows the download once a place is free', async () => {
  const crowded = await startTestService({ maxEventStreams: 1 });
  try {
    const client = createClient({ baseUrl: crowded.service.url });
    const holding = await client.create({ url: source.file('/holding.mp4', mediaPath('big.mp4'), { script: [{ delayMs: 20_000 }] }) });
    const held = await openEventStream(crowded.service.url, holding.id);
    expect(held.status).toBe(200);
    const created = await client.create({ url: source.file('/waiting.mp4', mediaPath('clip.mp4')) });
    const refusedAt = Date.now();
    setTimeout(() => held.close(), 1_000);
    const seen: Download[] = [];
    for await (const snapshot of client.watch(created.id)) seen.push(snapshot);
    expect(seen.at(-1)?.status).toBe('completed');
    // The first try was refused with Retry-After, and waited for.
    expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(1_000);
    await client.cancel(holding.id);
  } finally {
    await crowded.stop();
  }
}, 30_000);

test('when the file is removed while save is cut off, then save throws the 410 and leaves no part behind', async () => {
  let id = '';
  const { client, cutter } = await clientThrough({ cut: 'file', onCut: () => rm(path.join(app.config.dataDir, 'files', id), { force: true }) });
  ({ id } = await client.create({ url: source.file('/removed.mp4', mediaPath('big.mp4')) }));
  const target = path.join(work, 'removed.mp4');

  const gone = (await client.save(id, target).catch((error: unknown) => error)) as ProblemError;
  expect(gone).toBeInstanceOf(ProblemError);
  expect(gone.status).toBe(410);
  expect(gone.problem.status).toBe(410);
  // The second request was the resume, answered 410 by the service.
  expect(cutter.requests).toHaveLength(2);
  expect(cutter.requests[1]!.range).toMatch(/^bytes=\d+-$/);
  await expect(stat(`${target}.part`)).rejects.toThrow();
  await expect(stat(target)).rejects.toThrow();
});

test('when the service answers a problem, then it comes back as a ProblemError with the typed problem', async () => {
  const unknown = await vds.get('00000000-0000-4000-8000-000000000000').catch((error: unknown) => error);
  expect(unknown).toBeInstanceOf(ProblemError);
  expect((unknown as ProblemError).status).toBe(404);
  expect((unknown as ProblemError).problem).toMatchObject({ status: 404, title: expect.any(String), detail: expect.stringContaining('00000000') });

  const invalid = (await vds.create({ url: 'ftp://example.com/a.mp4' }).catch((error: unknown) => error)) as ProblemError;
  expect(invalid.status).toBe(400);
  expect(invalid.problem.errors?.map((error) => error.field)).toContain('/body/url');

  const badPage = (await vds.list({ cursor: 'not-a-cursor' }).catch((error: unknown) => error)) as ProblemError;
  expect(badPage.status).toBe(400);
});

test('when a download fails, then wait and save throw a ProblemError with its error code', async () => {
  const created = await vds.create({ url: source.url('/nowhere.mp4') });
  const failed = (await vds.wait(created.id).catch((error: unknown) => error)) as ProblemError;
  expect(failed).toBeInstanceOf(ProblemError);
  expect(failed.code).toBe('source_http_error');
  expect(failed.download?.status).toBe('failed');
  const target = path.join(work, 'never.mp4');
  await expect(vds.save(created.id, target)).rejects.toMatchObject({ code: 'source_http_error' });
  await expect(stat(target)).rejects.toThrow();
});

test('when a slow download is cancelled, then watch ends at cancelled and save refuses it', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const created = await vds.create({ url: source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 20) }) });
  const statuses: string[] = [];
  for await (const snapshot of vds.watch(created.id)) {
    statuses.push(snapshot.status);
    if (snapshot.status === 'downloading') expect((await vds.cancel(created.id)).status).toBe('cancelled');
  }
  expect(statuses.at(-1)).toBe('cancelled');
  expect((await vds.wait(created.id)).status).toBe('cancelled');
  await expect(vds.save(created.id, path.join(work, 'cancelled.mp4'))).rejects.toMatchObject({ status: 410, download: { status: 'cancelled' } });
});

test('when the signal aborts, then watch and save stop with its reason', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const created = await vds.create({ url: source.file('/aborted.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 30) }) });
  const reason = new Error('no longer wanted');
  const watching = new AbortController();
  const seen: string[] = [];
  const watched = (async () => {
    for await (const snapshot of vds.watch(created.id, { signal: watching.signal })) seen.push(snapshot.status);
  })();
  setTimeout(() => watching.abort(reason), 500);
  await expect(watched).rejects.toBe(reason);
  expect(seen.length).toBeGreaterThan(0);

  const saving = new AbortController();
  setTimeout(() => saving.abort(reason), 300);
  await expect(vds.save(created.id, path.join(work, 'aborted.mp4'), { signal: saving.signal })).rejects.toBe(reason);
  // The download itself goes on: only the waiting stopped.
  expect(['queued', 'downloading']).toContain((await vds.get(created.id)).status);
  await vds.cancel(created.id);
});

test("when save is given a folder, then it refuses before fetching, leaving nothing; and watch of an unknown id keeps the server's words", async () => {
  const created = await vds.create({ url: source.file('/folder.mp4', mediaPath('clip.mp4')) });
  await vds.wait(created.id);
  for (const target of [work, `${work}/`, '']) {
    await expect(vds.save(created.id, target)).rejects.toMatchObject({ status: 400, problem: { detail: expect.stringContaining('names a folder') } });
  }
  await expect(stat(`${work}.part`)).rejects.toThrow();
  const unknown = '00000000-0000-4000-8000-000000000000';
  const watching = (async () => {
    for await (const snapshot of vds.watch(unknown)) void snapshot;
  })();
  await expect(watching).rejects.toMatchObject({ status: 404, problem: { detail: `No download with id ${unknown}.` } });
});

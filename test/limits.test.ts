import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestService, type TestService } from './support/api.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { downloadToEnd, expectNothingStored } from './support/outcomes.ts';
import { waitFor, within } from './support/waiting.ts';

const MAX_FILE_BYTES = 512 * 1024;

/** Idle timeout, file size limit and a single attempt, so that every failure here is final at once. */
let strict: TestService;
/** Only the overall time limit is short: a source that keeps sending, slowly, must still be cut off. */
let hurried: TestService;
let source: FixtureServer;

beforeAll(async () => {
  [strict, hurried, source] = await Promise.all([
    startTestService({ sourceIdleTimeoutSeconds: 1, maxAttempts: 1, maxFileBytes: MAX_FILE_BYTES }),
    startTestService({ downloadTimeoutSeconds: 1 }),
    startFixtureServer(),
  ]);
});

afterAll(async () => {
  await source?.close();
  // A service that still holds a source connection cannot stop; that is reported, not waited on.
  const stopped = await Promise.allSettled([strict, hurried].map((app) => app && within(15_000, 'stopping the service', app.stop())));
  const failed = stopped.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
});

const download = (app: TestService, url: string) => downloadToEnd(app, { url });

/** Resolves when `res` can take more, or when its client has gone. */
async function drained(res: ServerResponse): Promise<void> {
  const done = new AbortController();
  await Promise.race([once(res, 'drain', { signal: done.signal }), once(res, 'close', { signal: done.signal })]).finally(() => done.abort());
}

/** Serves `bytes` over and over without a Content-Length (chunked), up to `total` or until the client leaves. */
function chunkedRoute(routePath: string, bytes: Buffer, total: number): string {
  return source.route(routePath, async (_req, res, { record }) => {
    res.writeHead(200, { 'Content-Type': 'video/mp4' });
    while (record.bytesSent < total && !res.destroyed) {
      const offset = record.bytesSent % bytes.length;
      const chunk = bytes.subarray(offset, offset + 64 * 1024);
      record.bytesSent += chunk.length;
      if (!res.write(chunk)) await drained(res);
    }
    res.end();
  });
}

// 1000 bytes: the stall comes while the first KiB is read to tell what the URL is.
test.each([4096, 1000])(
  'when a source stalls without closing the connection after %i bytes, then the download fails as source_timeout after the idle timeout',
  async (bytes) => {
    const url = source.file(`/stall-${bytes}.mp4`, mediaPath('clip.mp4'), { stallAfterBytes: bytes });
    const done = await download(strict, url);
    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'source_timeout' } });
    const [request] = source.requestsFor(`/stall-${bytes}.mp4`);
    expect(request?.outcome).toBe('stalled');
    expect(Date.parse(done.updated_at) - Date.parse(done.started_at!)).toBeLessThan(10_000);
    await expectNothingStored(strict, done.id);
  },
);

test('when a chunked source sends more than MAX_FILE_BYTES, then the download fails as source_too_large without reading the rest', async () => {
  const total = 32 * 1024 * 1024;
  const url = chunkedRoute('/endless.mp4', await readFile(mediaPath('big.mp4')), total);
  const done = await download(strict, url);
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large', retryable: false } });
  const [request] = source.requestsFor('/endless.mp4');
  // Far less than was on offer: the transfer stopped at the limit, not at the end of the body.
  expect(request!.bytesSent).toBeLessThan(total / 2);
  await expectNothingStored(strict, done.id);
});

test('when a source declares a Content-Length over MAX_FILE_BYTES, then the download fails as source_too_large before the body is read', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  expect(size).toBeGreaterThan(MAX_FILE_BYTES);
  // Throttled, so that a body read up to the limit would show in bytesSent.
  const url = source.file('/declared-big.mp4', mediaPath('big.mp4'), { bytesPerSecond: 1024 * 1024 });
  const done = await download(strict, url);
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large', retryable: false } });
  expect(done.error?.message).toContain(String(size));
  const [request] = source.requestsFor('/declared-big.mp4');
  // The service hangs up rather than leaving the source sending into a connection nobody reads.
  await waitFor('the source response to end', () => request!.outcome !== undefined, 3_000);
  expect(request!.bytesSent).toBeLessThan(MAX_FILE_BYTES);
  expect(request!.outcome).toBe('aborted');
  await expectNothingStored(strict, done.id);
});

/** `/hops/<name>/0` redirects to `/1` and so on; hop `redirects` is the file itself. */
function redirectChain(name: string, redirects: number): string {
  source.file(`/hops/${name}/${redirects}`, mediaPath('clip.mp4'));
  for (let hop = 0; hop < redirects; hop++) source.redirect(`/hops/${name}/${hop}`, `/hops/${name}/${hop + 1}`);
  return source.url(`/hops/${name}/0`);
}

test('when a source redirects 10 times, then the download follows every hop to the file', async () => {
  const done = await download(strict, redirectChain('ten', 10));
  expect(done.status).toBe('completed');
  expect(source.requestsFor('/hops/ten/10')).toHaveLength(1);
});

test('when a source redirects 11 times, then the download fails as source_http_error without following the last hop', async () => {
  const done = await download(strict, redirectChain('eleven', 11));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_http_error', retryable: false } });
  expect(source.requestsFor('/hops/eleven/10')).toHaveLength(1);
  expect(source.requestsFor('/hops/eleven/11')).toHaveLength(0);
  await expectNothingStored(strict, done.id);
});

test('when a source is too slow for DOWNLOAD_TIMEOUT_SECONDS, then the download fails as source_timeout while bytes still flow', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  // Never idle long enough for the idle timeout, but eight seconds for the whole file.
  const url = source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 8) });
  const done = await download(hurried, url);
  expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'source_timeout' } });
  const requests = source.requestsFor('/slow.mp4');
  expect(requests).toHaveLength(1);
  expect(requests[0]!.bytesSent).toBeGreaterThan(0);
  expect(requests[0]!.bytesSent).toBeLessThan(size / 2);
  await expectNothingStored(hurried, done.id);
});

/** Sends the first `fastBytes` of `bytes` at once, then a byte every 250 ms: never idle for a second, far under 1024 bytes a second. */
function trickleRoute(routePath: string, bytes: Buffer, contentType: string, fastBytes: number): string {
  return source.route(routePath, async (_req, res, { record }) => {
    res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': String(bytes.length) });
    res.write(bytes.subarray(0, fastBytes));
    record.bytesSent = fastBytes;
    while (record.bytesSent < bytes.length && !res.destroyed) {
      await sleep(250);
      res.write(bytes.subarray(record.bytesSent, record.bytesSent + 1));
      record.bytesSent += 1;
    }
    res.end();
  });
}

const playlist = Buffer.from(
  ['#EXTM3U', '#EXT-X-TARGETDURATION:1', ...Array.from({ length: 200 }, (_unused, index) => `#EXTINF:1,\nsegment${index}.ts`), '#EXT-X-ENDLIST'].join('\n'),
);

test.each([
  ['a file, after the first KiB that tells what it is', 'video/mp4', 2048],
  ['a file, from its first byte', 'video/mp4', 0],
  ['a playlist, after its first KiB', 'application/vnd.apple.mpegurl', 1500],
])(
  'when a source trickles %s, under the idle timeout but below SOURCE_MIN_BYTES_PER_SECOND, then the download fails as source_timeout within a window',
  async (what, contentType, fastBytes) => {
    const bytes = contentType === 'video/mp4' ? await readFile(mediaPath('clip.mp4')) : playlist;
    const url = trickleRoute(`/trickle/${fastBytes}`, bytes, contentType, fastBytes);
    const done = await download(strict, url);
    expect(done).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'source_timeout', message: expect.stringMatching(/slower than the 1024 bytes a second/) },
    });
    expect(Date.parse(done.updated_at) - Date.parse(done.started_at!)).toBeLessThan(10_000);
    await expectNothingStored(strict, done.id);
  },
);

import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DownloadError } from '../src/core/errors.ts';
import { WorkFolders } from '../src/files/work-folders.ts';
import { fetchPlan } from '../src/sources/segmented/index.ts';
import type { ByteRange, MediaPlan, SourceContext } from '../src/sources/types.ts';
import { LocalTransfers } from '../src/storage/local/local-transfers.ts';
import { frameHashes, resolveFfmpeg } from './support/ffmpeg.ts';
import { startFixtureServer, type FixtureServer, type ServeOptions } from './support/fixture-server.ts';
import { sha256File } from './support/media.ts';
import { testSourceHttp } from './support/source-http.ts';
import { AES_IV, segmentedMedia, type SegmentedMedia } from './support/streams/segmented-media.ts';
import { waitFor } from './support/waiting.ts';

type Progress = { downloaded: number; total: number | null };

/** The most the kernel lets a TCP connection's receive and send buffers grow to (Linux), added. */
async function socketBufferMaximums(): Promise<number> {
  const maximum = async (name: string, fallback: number) =>
    Number((await readFile(`/proc/sys/net/ipv4/${name}`, 'utf8').catch(() => '')).trim().split(/\s+/)[2] ?? fallback) || fallback;
  return (await maximum('tcp_rmem', 6 * 1024 * 1024)) + (await maximum('tcp_wmem', 4 * 1024 * 1024));
}

describe('fetching a planned stream', () => {
  let ffmpeg: string;
  let media: SegmentedMedia;
  let sourceFrames: string[];
  let source: FixtureServer;
  let dataDir: string;
  let work: WorkFolders;

  beforeAll(async () => {
    ffmpeg = await resolveFfmpeg();
    media = await segmentedMedia();
    sourceFrames = await frameHashes(media.sourceTs);
    source = await startFixtureServer();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-segmented-test-'));
    work = new WorkFolders(dataDir);
    await work.init();
  });

  afterAll(async () => {
    await source.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** A context on a real working directory; the same `id` gives the same directory, as on a retry. */
  async function context(id: string, maxFileBytes = 1024 ** 3): Promise<SourceContext & { reports: Progress[]; processingAfter: number[]; phases: string[] }> {
    const reports: Progress[] = [];
    // How many progress reports had come each time `processing` was called.
    const processingAfter: number[] = [];
    // The phases in the order they ended; `processing` ends the fetch.
    const phases: string[] = [];
    const workDir = await work.folder(id);
    return {
      url: source.url(`/${id}/index.m3u8`),
      http: testSourceHttp(),
      workDir,
      transfer: new LocalTransfers().open(id, workDir),
      signal: new AbortController().signal,
      maxFileBytes,
      directConnections: 1,
      validator: null,
      rememberValidator: async () => {},
      progress: (downloaded, total) => reports.push({ downloaded, total }),
      processing: () => {
        processingAfter.push(reports.length);
        phases.push('fetch');
        return Promise.resolve();
      },
      phaseEnded: (phase) => phases.push(phase),
      reports,
      processingAfter,
      phases,
    };
  }

  /** Serves the segments under `/prefix/` and plans them as one muxed track, as an HLS parser would. */
  function servePlan(prefix: string, segments: string[], options: (name: string) => ServeOptions = () => ({})): MediaPlan {
    const urls = segments.map((file) => source.file(`/${prefix}/${path.basename(file)}`, file, options(path.basename(file))));
    return { tracks: [{ kind: 'muxed', segments: urls.map((url) => ({ url })) }] };
  }

  const requestsUnder = (prefix: string) => source.requests.filter((request) => request.path.startsWith(`/${prefix}/`));
  const failureOf = (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: unknown) => error,
    );

  /** The source TS cut into byte ranges of whole TS packets, the way EXT-X-BYTERANGE cuts a file. */
  async function rangesOfSource(pieces: number): Promise<ByteRange[]> {
    const size = (await stat(media.sourceTs)).size;
    const step = Math.ceil(size / 188 / pieces) * 188;
    const ranges: ByteRange[] = [];
    for (let offset = 0; offset < size; offset += step) ranges.push({ offset, length: Math.min(step, size - offset) });
    return ranges;
  }

  test('when an HLS stream of MPEG-TS segments is fetched, then one MP4 with the source frames comes back, described and hashed', async () => {
    const plan = servePlan('plain', media.hlsSegments);
    const ctx = await context('plain');

    const fetched = await fetchPlan(ctx, plan, ffmpeg);

    expect(fetched).toMatchObject({ path: path.join(ctx.workDir, 'output.mp4'), mime: 'video/mp4', ext: 'mp4', width: 320, height: 240 });
    expect(fetched.durationSeconds).toBeGreaterThan(5.5);
    expect(fetched.sizeBytes).toBe((await stat(fetched.path)).size);
    expect(fetched.sha256).toBe(await sha256File(fetched.path));
    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    expect(requestsUnder('plain').map((request) => request.path)).toHaveLength(media.hlsSegments.length);
    // Only the output is left: the pieces and the joined track are gone.
    expect(await readdir(ctx.workDir)).toEqual(['output.mp4', 'segments']);
    expect(await readdir(path.join(ctx.workDir, 'segments'))).toEqual([]);
  });

  test('when the segments are AES-128 encrypted, then they are decrypted with a key fetched once', async () => {
    const plan = servePlan('aes', media.aesSegments);
    const keyUrl = source.file('/aes/key.bin', media.aesKey, { contentType: 'application/octet-stream' });
    for (const segment of plan.tracks[0]!.segments) segment.key = { method: 'AES-128', uri: keyUrl, iv: AES_IV.toString('hex') };

    const fetched = await fetchPlan(await context('aes'), plan, ffmpeg);

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    expect(source.requestsFor('/aes/key.bin')).toHaveLength(1);
  });

  test('when the segments are fragmented MP4, then the init section is fetched first and put before them', async () => {
    const plan = servePlan('fmp4', media.fmp4Segments);
    const delayMs = 200;
    plan.tracks[0]!.init = { url: source.file('/fmp4/init.mp4', media.fmp4Init, { script: [{ delayMs }] }) };

    const fetched = await fetchPlan(await context('fmp4'), plan, ffmpeg);

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    const [init, ...segments] = requestsUnder('fmp4');
    expect(init?.path).toBe('/fmp4/init.mp4');
    expect(segments).toHaveLength(media.fmp4Segments.length);
    // The slow init section was answered before any segment was asked for.
    expect(Math.min(...segments.map((request) => request.receivedAt))).toBeGreaterThanOrEqual(init!.receivedAt + delayMs);
  });

  test('when later segments answer before earlier ones, then the track is still in play order', async () => {
    // Each segment answers sooner than the one before it, so all but the last finish ahead of their turn.
    const delay = (name: string) => (media.hlsSegments.length - Number(/\d+/.exec(name)![0])) * 150;
    const plan = servePlan('reversed', media.hlsSegments, (name) => ({ script: [{ delayMs: delay(name) }] }));

    const fetched = await fetchPlan(await context('reversed'), plan, ffmpeg, { concurrency: media.hlsSegments.length });

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
  });

  test('when segments after a stalled one bring more than a track holds in memory, then their answers are made to wait', async () => {
    // From a file, so that the fixture sends it in small chunks as the connection takes them.
    const big = path.join(dataDir, 'big.ts');
    await writeFile(big, Buffer.alloc(128 * 1024 * 1024));
    // Every request for the first segment stalls: on a loaded machine the check may come after the
    // idle timeout, and an answered retry would let the big segment through.
    const stall = { stallAfterBytes: 0 };
    const plan: MediaPlan = {
      tracks: [
        {
          kind: 'muxed',
          segments: [
            { url: source.file('/held/seg000.ts', media.hlsSegments[0]!, { script: [stall, stall, stall] }) },
            { url: source.file('/held/big.ts', big) },
          ],
        },
      ],
    };
    const controller = new AbortController();
    const fetching = failureOf(fetchPlan({ ...(await context('held')), signal: controller.signal }, plan, ffmpeg, { concurrency: 2 }));
    await waitFor('the big segment to be asked for', () => source.requestsFor('/held/big.ts').length > 0);
    // A local answer takes a fraction of this.
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const [answer] = source.requestsFor('/held/big.ts');
    expect(answer!.outcome).toBeUndefined();
    expect(answer!.bytesSent).toBeGreaterThan(32 * 1024 * 1024);
    // Beyond what the track holds, the kernel's buffers of the connection's two ends, which grow
    // up to the machine's TCP maximums (32 MiB for a reader on some machines), and some slack.
    expect(answer!.bytesSent).toBeLessThan(32 * 1024 * 1024 + (await socketBufferMaximums()) + 8 * 1024 * 1024);
    controller.abort(new Error('seen enough'));
    await fetching;
  });

  test('when one segment stalls far longer than its siblings, then it is asked for again and the first answer wins, long before the idle timeout', async () => {
    // The first request for seg005 sends nothing and holds the connection; the second answers.
    const plan = servePlan('hedge', media.hlsSegments, (name) => (name === 'seg005.ts' ? { stallAfterBytes: 0 } : {}));
    const started = Date.now();

    const fetched = await fetchPlan(await context('hedge'), plan, ffmpeg, { concurrency: 2 });

    // The idle timeout of the test's source client is 5 s; the second request goes after about 1.
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    expect(fetched.segments).toMatchObject({ count: media.hlsSegments.length, hedged: 1, retried: 0 });
    expect(source.requestsFor('/hedge/seg005.ts')).toHaveLength(2);
  });

  test('when the very first segment stalls, before any sibling has finished, then it is still asked for again once they have', async () => {
    const plan = servePlan('hedge-first', media.hlsSegments, (name) => (name === 'seg000.ts' ? { stallAfterBytes: 0 } : {}));
    const started = Date.now();

    const fetched = await fetchPlan(await context('hedge-first'), plan, ffmpeg, { concurrency: 8 });

    expect(Date.now() - started).toBeLessThan(4_000);
    expect(fetched.segments).toMatchObject({ hedged: 1 });
    expect(source.requestsFor('/hedge-first/seg000.ts')).toHaveLength(2);
  });

  test('when the signal aborts during the download, then the fetch stops with its reason, and a fetch after it asks only for the segments not finished', async () => {
    const plan = servePlan('abort', media.hlsSegments, (name) => (name === 'seg003.ts' ? { stallAfterBytes: 0 } : {}));
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const fetching = failureOf(fetchPlan({ ...(await context('abort')), signal: controller.signal }, plan, ffmpeg, { concurrency: 1 }));
    while (source.requestsFor('/abort/seg003.ts').length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const abortedAt = Date.now();
    controller.abort(reason);

    expect(await fetching).toBe(reason);
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    // Within a second of starting: only the record written as the fetch stopped knows of the three.
    const fetched = await fetchPlan(await context('abort'), plan, ffmpeg, { concurrency: 1 });
    expect(requestsUnder('abort').map((request) => path.basename(request.path))).toEqual([
      ...['seg000.ts', 'seg001.ts', 'seg002.ts', 'seg003.ts'],
      ...['seg003.ts', 'seg004.ts', 'seg005.ts'],
    ]);
    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
  });

  test('when the AES-128 key is not 16 bytes long, then the fetch fails with unsupported_source', async () => {
    const plan = servePlan('short-key', media.aesSegments.slice(0, 2));
    const keyUrl = source.content('/short-key/key.bin', (await readFile(media.aesKey)).subarray(0, 15));
    for (const segment of plan.tracks[0]!.segments) segment.key = { method: 'AES-128', uri: keyUrl, iv: AES_IV.toString('hex') };

    expect(await failureOf(fetchPlan(await context('short-key'), plan, ffmpeg))).toMatchObject({ code: 'unsupported_source', retryable: false });
  });

  test('when each segment answers slowly, then no more than `concurrency` are requested at a time, and that many are', async () => {
    const delayMs = 200;
    const plan = servePlan('pool', media.hlsSegments, () => ({ script: [{ delayMs, times: Infinity }] }));

    await fetchPlan(await context('pool'), plan, ffmpeg, { concurrency: 2 });

    // A request occupies its slot for at least delayMs, so the requests that arrived within less
    // than that of one another were all in flight together.
    const arrivals = requestsUnder('pool').map((request) => request.receivedAt);
    expect(arrivals).toHaveLength(media.hlsSegments.length);
    const inFlight = arrivals.map((start) => arrivals.filter((t) => t >= start && t < start + delayMs - 50).length);
    expect(Math.max(...inFlight)).toBe(2);
  });

  test('when a segment answers 503 once, then that segment alone is retried and the download completes', async () => {
    const plan = servePlan('flaky', media.hlsSegments, (name) => (name === 'seg002.ts' ? { statuses: [503] } : {}));

    const fetched = await fetchPlan(await context('flaky'), plan, ffmpeg);

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    expect(source.requestsFor('/flaky/seg002.ts').map((request) => request.status)).toEqual([503, 200]);
    expect(requestsUnder('flaky')).toHaveLength(media.hlsSegments.length + 1);
    // What the log's completed line will say of it.
    expect(fetched.segments).toEqual({ count: media.hlsSegments.length, retried: 1, hedged: 0, slowest_ms: expect.any(Number) });
  });

  test('when a segment answers 404, then the fetch fails with source_http_error without retrying it', async () => {
    const plan = servePlan('missing', media.hlsSegments, (name) => (name === 'seg001.ts' ? { statuses: [404] } : {}));

    const failure = await failureOf(fetchPlan(await context('missing'), plan, ffmpeg));

    expect(failure).toBeInstanceOf(DownloadError);
    expect(failure).toMatchObject({ code: 'source_http_error', retryable: false });
    expect(source.requestsFor('/missing/seg001.ts')).toHaveLength(1);
  });

  test('when a fetch is run again on the same working directory, then the segments it had finished are not fetched again', async () => {
    const plan = servePlan('resume', media.hlsSegments, (name) => (name === 'seg003.ts' ? { statuses: [404] } : {}));
    // One at a time, so the first run has finished exactly the segments before the failing one.
    expect(await failureOf(fetchPlan(await context('resume'), plan, ffmpeg, { concurrency: 1 }))).toMatchObject({ code: 'source_http_error' });
    expect(requestsUnder('resume').map((request) => path.basename(request.path))).toEqual(['seg000.ts', 'seg001.ts', 'seg002.ts', 'seg003.ts']);

    const ctx = await context('resume');
    const fetched = await fetchPlan(ctx, plan, ffmpeg, { concurrency: 1 });

    expect(
      requestsUnder('resume')
        .slice(4)
        .map((request) => path.basename(request.path)),
    ).toEqual(['seg003.ts', 'seg004.ts', 'seg005.ts']);
    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    // What was on disk counts from the start.
    const done = (await Promise.all(media.hlsSegments.slice(0, 3).map((file) => stat(file)))).reduce((sum, s) => sum + s.size, 0);
    expect(ctx.reports[0]).toEqual({ downloaded: done, total: null });
  });

  test('when every segment is a byte range, then the ranges are asked for, and progress counts up to the known total', async () => {
    const ranges = await rangesOfSource(5);
    const url = source.file('/ranges/source.ts', media.sourceTs);
    const ctx = await context('ranges');

    const fetched = await fetchPlan(ctx, { tracks: [{ kind: 'muxed', segments: ranges.map((byteRange) => ({ url, byteRange })) }] }, ffmpeg);

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    const asked = source.requestsFor('/ranges/source.ts').map((request) => request.range);
    expect(asked.sort()).toEqual(ranges.map((range) => `bytes=${range.offset}-${range.offset + range.length - 1}`).sort());
    const size = (await stat(media.sourceTs)).size;
    expect(ctx.reports.every((report) => report.total === size)).toBe(true);
    expect(ctx.reports.at(-1)).toEqual({ downloaded: size, total: size });
    expect(ctx.processingAfter).toEqual([ctx.reports.length]);
    expect(ctx.phases).toEqual(['fetch', 'remux', 'probe']);
    expect(ctx.reports.map((report) => report.downloaded)).toEqual([...ctx.reports.map((report) => report.downloaded)].sort((a, b) => a - b));
  });

  test('when the source ignores Range and sends the whole file, then each segment is cut out of it', async () => {
    const ranges = await rangesOfSource(3);
    const url = source.file('/no-ranges/source.ts', media.sourceTs, { ranges: false });

    const fetched = await fetchPlan(
      await context('no-ranges'),
      { tracks: [{ kind: 'muxed', segments: ranges.map((byteRange) => ({ url, byteRange })) }] },
      ffmpeg,
    );

    expect(source.requestsFor('/no-ranges/source.ts').map((request) => request.status)).toEqual([200, 200, 200]);
    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
  });

  test('when the segments add up to more than MAX_FILE_BYTES, then the fetch fails with source_too_large', async () => {
    const plan = servePlan('too-large', media.hlsSegments);
    const failure = await failureOf(fetchPlan(await context('too-large', 100_000), plan, ffmpeg));
    expect(failure).toMatchObject({ code: 'source_too_large', retryable: false });

    // With every size known beforehand, nothing is fetched at all.
    const url = source.file('/too-large-ranges/source.ts', media.sourceTs);
    const ranged: MediaPlan = { tracks: [{ kind: 'muxed', segments: (await rangesOfSource(3)).map((byteRange) => ({ url, byteRange })) }] };
    expect(await failureOf(fetchPlan(await context('too-large-ranges', 100_000), ranged, ffmpeg))).toMatchObject({ code: 'source_too_large' });
    expect(source.requestsFor('/too-large-ranges/source.ts')).toHaveLength(0);
  });

  test('when a plan has separate video and audio tracks, then they are merged into one file with both', async () => {
    const video = source.file('/tracks/video.ts', media.videoOnlyTs);
    const audio = source.file('/tracks/audio.aac', media.audioOnlyAac);
    // Listed audio first: the order of the plan must not decide which input gives the video.
    const plan: MediaPlan = {
      tracks: [
        { kind: 'audio', segments: [{ url: audio }] },
        { kind: 'video', segments: [{ url: video }] },
      ],
    };

    const fetched = await fetchPlan(await context('tracks'), plan, ffmpeg);

    expect(await frameHashes(fetched.path)).toEqual(sourceFrames);
    expect(await frameHashes(fetched.path, 'a')).toEqual(await frameHashes(media.audioOnlyAac, 'a'));
    expect((await readFile(fetched.path)).subarray(4, 8).toString('latin1')).toBe('ftyp');
  });
});

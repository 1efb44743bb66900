import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cutClip } from '../src/media/cut.ts';
import { completedDownload, finishedDownload, savedFile, startTestService, type Download } from './support/api.ts';
import { decodeErrors, frameHashes, resolveFfmpeg, runFfmpeg, streamsOf } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';
import { parseRange } from './support/http-ranges.ts';
import { sha256File } from './support/media.ts';
import { startPythonServer, type PythonServer } from './support/python-server.ts';
import { startRawServer } from './support/raw-http-server.ts';

// A clip of a direct MP4 whose source answers ranges fetches its index and then only the samples
// the clip needs. The large media is 300 MB of noise (which does not compress), 60 s long with a
// keyframe every 2 s: 4 s of it encoded once, then repeated 15 times without re-encoding, so that
// its picture at any time is the 4-second file's at that time modulo 4 s. The fixture server
// counts every byte it sends.

const { app, source } = useService();
let scratch: string;
let python: PythonServer;
let media: { unit: string; fast: string; tailIndex: string; small: string };

const GOP = ['-g', '50', '-keyint_min', '50', '-sc_threshold', '0'];
const AAC = ['-c:a', 'aac', '-b:a', '64k'];
const FPS = 25;
/** 4 s to 8 s of the 60 s media asked for, from 31 s: kept from the keyframe at 30 s. */
const CLIP = { start_seconds: 31, end_seconds: 35 };
const KEYFRAME_SECONDS = 30;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-clip-ranges-'));
  media = {
    unit: path.join(scratch, 'unit.mp4'),
    fast: path.join(scratch, 'fast.mp4'),
    tailIndex: path.join(scratch, 'tail-index.mp4'),
    small: path.join(scratch, 'small.mp4'),
  };
  const noise = `nullsrc=size=640x360:rate=${FPS}:duration=4,geq=lum='random(1)*255':cb=128:cr=128`;
  await Promise.all([
    runFfmpeg([
      ...['-f', 'lavfi', '-i', noise, '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=4'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '20', '-pix_fmt', 'yuv420p', ...GOP, ...AAC, media.unit],
    ]),
    // Small and quick to fetch whole, for the cases that end up fetching the whole file; with
    // B-frames, so that its video's edit list starts it later than its first sample's time.
    runFfmpeg([
      ...['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=${FPS}:duration=60`, '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=60'],
      ...['-c:v', 'libx264', '-preset', 'medium', '-bf', '3', '-pix_fmt', 'yuv420p', ...GOP, ...AAC, '-movflags', '+faststart', media.small],
    ]),
  ]);
  // ffmpeg's MP4 muxer writes the index at the end; fast start moves it to the front.
  await runFfmpeg(['-stream_loop', '14', '-i', media.unit, '-c', 'copy', '-t', '60', media.tailIndex]);
  await runFfmpeg(['-i', media.tailIndex, '-c', 'copy', '-movflags', '+faststart', media.fast]);
  python = await startPythonServer(scratch);
}, 120_000);

afterAll(async () => {
  await python?.stop();
  await rm(scratch, { recursive: true, force: true });
});

const finished = (body: Record<string, unknown>) => finishedDownload(app, body, 90_000);
const completed = (body: Record<string, unknown>) => completedDownload(app, body, 90_000);

/** Body bytes the fixture server sent for `routePath`, over every request. */
function bytesServed(routePath: string): number {
  return source.requestsFor(routePath).reduce((sum, request) => sum + request.bytesSent, 0);
}

/** The same clip of the whole file, cut by the service's own cut: what a whole fetch would have given. */
async function wholeCut(file: string, clip: { start_seconds: number; end_seconds: number }): Promise<string> {
  const cut = await cutClip({
    ffmpeg: await resolveFfmpeg(),
    input: file,
    output: path.join(scratch, `${path.basename(file)}-${clip.start_seconds}-whole`),
    clip: { startSeconds: clip.start_seconds, endSeconds: clip.end_seconds },
    maxBytes: 1024 ** 3,
    durationSeconds: null,
    signal: AbortSignal.timeout(60_000),
  });
  return cut.path;
}

/** Checks a clip of CLIP: from the keyframe at 30 s to 35 s, its streams together, decoding cleanly, as the whole file's cut is. */
async function expectClip(done: Download, sourceFile: string, firstFrame: string): Promise<void> {
  const file = await savedFile(app.http, done, scratch);
  const duration = CLIP.end_seconds - KEYFRAME_SECONDS;
  expect(Math.abs(done.file!.duration_seconds! - duration)).toBeLessThanOrEqual(2 / FPS);
  const frames = await frameHashes(file);
  expect(frames[0]).toBe(firstFrame);
  expect(Math.abs(frames.length - duration * FPS)).toBeLessThanOrEqual(2);
  const streams = await streamsOf(file);
  expect(streams.video.firstKey).toBe(true);
  expect(Math.abs(streams.video.start - streams.audio.start)).toBeLessThan(0.05);
  expect(await decodeErrors(file)).toBe('');
  expect(done.file!.sha256).toBe(await sha256File(await wholeCut(sourceFile, CLIP)));
}

describe('a clip of a large MP4 served with ranges', () => {
  let firstFrame: string;
  beforeAll(async () => {
    // The 60 s file is the 4 s one over and over: its picture at 30 s is the 4 s file's at 2 s.
    firstFrame = (await frameHashes(media.unit))[(KEYFRAME_SECONDS % 4) * FPS]!;
  });

  test.each([
    ['a fast-start MP4', 'fast'],
    ['an MP4 with its index at the end', 'tailIndex'],
  ] as const)(
    'when a 4 s clip of %s of 300 MB and 60 s is downloaded, then less than a fifth of it is fetched, in ranges, and the file is the clip from the keyframe before its start',
    async (_case, name) => {
      const size = (await stat(media[name])).size;
      expect(size).toBeGreaterThan(250 * 1024 * 1024);
      const route = `/ranges/${name}.mp4`;
      const done = await completed({ url: source.file(route, media[name]), clip: CLIP });
      expect(bytesServed(route)).toBeLessThan(size / 5);
      // The first answer is let go of at once; all else is asked for in ranges.
      expect(
        source
          .requestsFor(route)
          .slice(1)
          .every((request) => request.status === 206),
      ).toBe(true);
      expect(done.progress.downloaded_bytes).toBeLessThan(size / 5);
      await expectClip(done, media[name], firstFrame);
    },
    120_000,
  );
});

test("when the MP4's video has B-frames, then its clip is fetched in ranges all the same, and is the whole file's cut", async () => {
  const route = '/ranges/b-frames.mp4';
  const clip = { start_seconds: 13, end_seconds: 17.5 };
  const done = await completed({ url: source.file(route, media.small), clip });
  const ranged = source.requestsFor(route).slice(1);
  expect(ranged.length).toBeGreaterThan(0);
  expect(ranged.every((request) => request.status === 206)).toBe(true);
  expect(done.file!.sha256).toBe(await sha256File(await wholeCut(media.small, clip)));
});

test('when a range is cut off mid-way, then the retry asks for the clip again and completes it', async () => {
  const route = '/ranges/reset.mp4';
  // The first answer, the first range (its boxes and index), then the samples: cut after 1000 bytes.
  const done = await completed({ url: source.file(route, media.small, { script: [{}, {}, { resetAfterBytes: 1000 }] }), clip: CLIP });
  expect(done.attempts).toBe(2);
  expect(source.requestsFor(route).some((request) => request.outcome === 'cut')).toBe(true);
  expect(done.file!.sha256).toBe(await sha256File(await wholeCut(media.small, CLIP)));
});

test('when MAX_FILE_BYTES is below what the clip needs but above its index, then the download fails as source_too_large before a sample is fetched', async () => {
  const limited = await startTestService({ maxFileBytes: 10 * 1024 * 1024 });
  try {
    const route = '/ranges/over-limit.mp4';
    const created = await limited.http.createDownload({ url: source.file(route, media.fast), clip: CLIP });
    const done = await limited.waitForStatus(created.body.id as string, ['completed', 'failed'], 60_000);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
    expect(source.requestsFor(route).every((request) => request.bytesSent < 1024 * 1024)).toBe(true);
  } finally {
    await limited.stop();
  }
});

describe('a clip of an MP4 whose index cannot be read in ranges', () => {
  test('when python -m http.server (which ignores Range) serves the MP4, then the whole file is fetched and cut the same way', async () => {
    const done = await completed({ url: `${python.url}/small.mp4`, clip: CLIP });
    expect(python.requests().filter((request) => request.path === '/small.mp4')).toEqual([expect.objectContaining({ method: 'GET', status: 200 })]);
    expect(done.file!.sha256).toBe(await sha256File(await wholeCut(media.small, CLIP)));
  });

  test('when a source offers ranges but answers each with the whole file, then the whole file is fetched and cut the same way', async () => {
    const route = '/ranges/refused.mp4';
    const done = await completed({ url: source.file(route, media.small, { ranges: false, headers: { 'Accept-Ranges': 'bytes' } }), clip: CLIP });
    const requests = source.requestsFor(route);
    expect(requests.some((request) => request.range !== undefined)).toBe(true);
    expect(requests.at(-1)).toMatchObject({ range: undefined, status: 200, outcome: 'complete', bytesSent: (await stat(media.small)).size });
    expect(done.file!.sha256).toBe(await sha256File(await wholeCut(media.small, CLIP)));
  });

  test('when every answer of a source names another version and If-Range is ignored, then the whole file is fetched and cut the same way', async () => {
    const bytes = await readFile(media.small);
    let answers = 0;
    const server = http.createServer((request, response) => {
      answers += 1;
      const range = request.headers.range ? parseRange(request.headers.range, bytes.length) : undefined;
      const headers = { 'Content-Type': 'video/mp4', 'Accept-Ranges': 'bytes', ETag: `"v${answers}"` };
      if (range && range !== 'unsatisfiable') {
        response.writeHead(206, {
          ...headers,
          'Content-Range': `bytes ${range.start}-${range.end}/${bytes.length}`,
          'Content-Length': range.end + 1 - range.start,
        });
        response.end(bytes.subarray(range.start, range.end + 1));
      } else {
        response.writeHead(200, { ...headers, 'Content-Length': bytes.length });
        response.end(bytes);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const done = await completed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/changing.mp4`, clip: CLIP });
      expect(done.attempts).toBe(1);
      expect(done.file!.sha256).toBe(await sha256File(await wholeCut(media.small, CLIP)));
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  /** The small MP4 with the first entry of its first `box` changed: a 32-bit field `at` bytes into the box's payload set to `value`. */
  async function hostile(name: string, box: string, at: number, value: number): Promise<string> {
    const bytes = await readFile(media.small);
    const found = bytes.indexOf(box, 0, 'latin1');
    expect(found).toBeGreaterThan(0);
    bytes.writeUInt32BE(value, found + 4 + at);
    const file = path.join(scratch, name);
    await writeFile(file, bytes);
    return file;
  }

  test.each([
    // stco: version and flags, count, then the first chunk's offset.
    ['its first chunk placed past the end of the file', 'past-end.mp4', 'stco', 8, 0xfffffff0],
    // stsz: version and flags, the constant size (0: one each), then the count.
    ['a sample count far beyond the sizes it holds', 'lying-count.mp4', 'stsz', 8, 0x7fffffff],
    // stts: version and flags, count, then the first run's sample count and duration.
    ['durations that add up past any real time', 'endless.mp4', 'stts', 12, 0xffffffff],
    // stss: version and flags, count, then the first sync sample.
    ['a sync sample past its last sample', 'far-sync.mp4', 'stss', 8, 0xfffffff0],
  ])('when the index has %s, then the download ends without a crash, and a failure says what is wrong', async (_case, name, box, at, value) => {
    const file = await hostile(name, box, at, value);
    const done = await finished({ url: source.file(`/ranges/${name}`, file), clip: CLIP });
    if (done.status === 'failed') {
      expect(['unsupported_source', 'processing_failed']).toContain(done.error!.code);
      expect(done.error!.message).not.toMatch(/unexpected/i);
    } else {
      // Ranges or not, what is kept is what the whole file's cut keeps.
      expect(done.file!.sha256).toBe(await sha256File(await wholeCut(file, CLIP)));
    }
  });
});

test('when the clip starts past the end the index gives, then the download fails with clip_out_of_range before any sample is fetched', async () => {
  const route = '/ranges/past-end-clip.mp4';
  const done = await finished({ url: source.file(route, media.fast), clip: { start_seconds: 61, end_seconds: 70 } });
  expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'clip_out_of_range', retryable: false } });
  expect(bytesServed(route)).toBeLessThan((await stat(media.fast)).size / 20);
});

test('when a source offering ranges says its MP4 is larger than any file can be, then the clip is not fetched in ranges and the download fails as source_too_large', async () => {
  const ftyp = Buffer.from('00000018667479706d703432000000006d70343269736f6d', 'hex');
  // More than the first KiB the service reads to tell what the answer is.
  const free = Buffer.concat([Buffer.from('0000080066726565', 'hex'), Buffer.alloc(0x800 - 8)]);
  // The body never comes: the service must decide from the head alone, and let the answer go.
  const server = await startRawServer(async (_request, socket) => {
    socket.write(
      Buffer.concat([
        Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nContent-Length: 1000000000000000\r\nAccept-Ranges: bytes\r\nETag: "huge"\r\n\r\n'),
        ftyp,
        free,
      ]),
    );
    await new Promise((resolve) => socket.once('close', resolve));
    return false;
  });
  try {
    const done = await finished({ url: `${server.url}/huge.mp4`, clip: { start_seconds: 1, end_seconds: 2 } });
    expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
    expect(server.requests.every((request) => request.headers.range === undefined)).toBe(true);
  } finally {
    await server.close();
  }
});

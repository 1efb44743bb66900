import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type net from 'node:net';
import { makeDataDir } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { acknowledged, startRawServer, unsentBytes, written, type RawHandler, type RawRequest, type RawServer } from './support/raw-http-server.ts';
import { downloadAtOnce, downloadEverySize, expectWhole, forget, nextDownload, outcome, type Downloader, type Fetched } from './support/real-servers.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { sizedMedia, type SizedMediaName } from './support/sized-media.ts';

// What no real server does on purpose, but real servers and networks still do, written by hand on
// node:net: a complete body followed at once by a TCP reset, a body with no Content-Length
// (chunked, or ended by the close), a file that changes between a cut-off response and its
// resumption, a Range answered with the whole file. The service runs as `npm start` runs it, in a
// process of its own, so that "it is still alive" means the process.

const SIZES = ['below-64k.mp4', 'at-64k.mp4', 'above-64k.mp4', 'few-mb.mp4', 'large.mp4'] as const satisfies readonly SizedMediaName[];
// A reset at once throws away what the kernel has not sent yet, up to its whole send buffer (MBs):
// of tens of MB, a resumed remainder can lose its every byte again, so these stop at a few MB.
const RESET_SIZES = ['below-64k.mp4', 'at-64k.mp4', 'above-64k.mp4', 'few-mb.mp4'] as const satisfies readonly SizedMediaName[];
const LAST_MODIFIED = 'Tue, 03 Nov 2026 10:00:00 GMT';
const CHANGED_LAST_MODIFIED = 'Wed, 04 Nov 2026 10:00:00 GMT';

let database: TestDatabase;
let dataDir: string;
let proc: ServiceProcess;
let service: Downloader;
let media: Record<SizedMediaName, string>;
const bytes = new Map<string, Buffer>();
const servers: RawServer[] = [];

beforeAll(async () => {
  [database, dataDir, media] = await Promise.all([createTestDatabase(), makeDataDir(), sizedMedia()]);
  for (const name of [...SIZES, 'above-64k-changed.mp4'] as const) bytes.set(name, await readFile(media[name]));
  proc = await spawnServiceProcess({
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
    RETRY_DELAY_SECONDS: '1',
    // Room for every resume a reset that really lost bytes may need; each test says how many it may.
    MAX_ATTEMPTS: '10',
    WORKER_CONCURRENCY: '16',
    LOG_LEVEL: 'warn',
  });
  service = { http: proc.http, dataDir };
}, 120_000);

afterAll(async () => {
  await killServiceProcesses();
  await Promise.all(servers.map((server) => server.close()));
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function serve(handler: RawHandler): Promise<RawServer> {
  const server = await startRawServer(handler);
  servers.push(server);
  return server;
}

/** The process still answers: an unknown download is a 404, not a refused connection. When it is gone, what it last printed says why. */
async function expectStillAnswering(): Promise<void> {
  const res = await proc.http.getDownload('00000000-0000-4000-8000-000000000000').catch((error: unknown) => {
    throw new Error(`the service process no longer answers (${String(error)}); it last printed:\n${proc.output().slice(-4000)}`);
  });
  expect(res.status).toBe(404);
}

// A test that finds the process gone says so, rather than failing on a refused connection.
beforeEach(() => expectStillAnswering());

const fileOf = (target: string): { name: string; data: Buffer } => {
  const name = path.basename(target.split('?')[0]!);
  const data = bytes.get(name);
  if (!data) throw new Error(`no file ${name}`);
  return { name, data };
};

const etagOf = (data: Buffer) => `"${createHash('sha256').update(data).digest('hex').slice(0, 16)}"`;

/** The head of a response with `data` from `from` on: 206 when a Range asks for it, 200 with the whole otherwise. */
function fileHead(data: Buffer, from: number, extra: string[] = [], etag = etagOf(data), lastModified = LAST_MODIFIED): string {
  const lines =
    from > 0
      ? ['HTTP/1.1 206 Partial Content', `Content-Range: bytes ${from}-${data.length - 1}/${data.length}`, `Content-Length: ${data.length - from}`]
      : ['HTTP/1.1 200 OK', `Content-Length: ${data.length}`];
  return [...lines, 'Content-Type: video/mp4', 'Accept-Ranges: bytes', `ETag: ${etag}`, `Last-Modified: ${lastModified}`, ...extra, '', ''].join('\r\n');
}

/** Where a `Range: bytes=N-` asks to start; 0 without one. */
const rangeStart = (request: RawRequest) => Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? '')?.[1] ?? 0);

describe('a complete body followed at once by a TCP reset', () => {
  /**
   * Sends the whole response (honouring `Range: bytes=N-` with If-Range), then resets the
   * connection: at once, the moment the kernel has taken the last byte, or only once the client's
   * kernel has acknowledged it. Notes the bytes the kernel had not sent when the reset went: those,
   * and only those, are lost.
   */
  const resetting =
    (when: 'at once' | 'once acknowledged', extra: string[]): RawHandler =>
    async (request, socket: net.Socket) => {
      const { data } = fileOf(request.target);
      const ifRange = request.headers['if-range'];
      const from = ifRange === undefined || ifRange === etagOf(data) || ifRange === LAST_MODIFIED ? Math.min(rangeStart(request), data.length) : 0;
      await written(socket, Buffer.concat([Buffer.from(fileHead(data, from, extra), 'latin1'), data.subarray(from)]));
      if (when === 'once acknowledged') request.notes.acknowledged = await acknowledged(socket);
      request.notes.unsent = unsentBytes(socket);
      socket.resetAndDestroy();
      return false;
    };

  /** Each request of a download as the checks compare it: whether it asked for the whole file or the rest, and whether its response lost bytes to the reset. */
  const story = (server: RawServer, one: Fetched) =>
    server.requestsFor(one.target).map((request) => ({
      asked: request.headers.range === undefined ? 'whole' : /^bytes=[1-9]\d*-$/.test(request.headers.range) ? 'the rest' : request.headers.range,
      lost: (request.notes.unsent as number) > 0,
    }));

  test.each([
    ['at once, with no Connection header (keep-alive implied)', 'at once', []],
    ['at once, after Connection: close', 'at once', ['Connection: close']],
    ['only once the client has acknowledged the last byte', 'once acknowledged', []],
  ] as const)(
    `when a source resets the connection %s, for ${RESET_SIZES.join(', ')}, each alone and then 4 of each at once, then every download completes whole, taking another attempt only where the kernel really threw bytes away, and the service lives on`,
    async (_how, when, extra) => {
      const server = await serve(resetting(when, [...extra]));
      const fetched = await downloadEverySize(service, server.url, media, (size, n) => `/media/${size}?download=${n}`, RESET_SIZES);
      // A response that lost no byte (nothing left unsent when the reset went) is the download's
      // last: it costs no other attempt. Only one that did may be followed by another request, for
      // the rest or, if nothing had reached the disk, the whole again. (Bytes still unsent when
      // they were counted may yet leave in the moment before the reset, so a response that seemed
      // to lose some may still have been the last.)
      const requests = (one: Fetched) => story(server, one);
      expect(fetched.map((one) => ({ download: one.label, requests: requests(one) }))).toEqual(
        fetched.map((one) => ({
          download: one.label,
          requests: requests(one).map((request, i, all) => ({
            asked: i === 0 ? 'whole' : expect.stringMatching(/^(whole|the rest)$/),
            lost: i < all.length - 1 ? true : request.lost,
          })),
        })),
      );
      if (when === 'once acknowledged') expect(fetched.flatMap((one) => requests(one).filter((request) => request.lost))).toEqual([]);
      await expectWhole(service, fetched, (one) => requests(one).length);
      await expectStillAnswering();
      await forget(service, fetched);
    },
    180_000,
  );
});

describe('a body without Content-Length', () => {
  const CHUNKS = [1, 1000, 16_384, 65_536, 7, 65_535];

  const chunked: RawHandler = async (request, socket) => {
    const { data } = fileOf(request.target);
    await written(socket, 'HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nTransfer-Encoding: chunked\r\n\r\n');
    for (let offset = 0, i = 0; offset < data.length; i++) {
      const chunk = data.subarray(offset, offset + CHUNKS[i % CHUNKS.length]!);
      offset += chunk.length;
      if (!(await written(socket, Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])))) return false;
    }
    await written(socket, '0\r\n\r\n');
    return true;
  };

  const closeDelimited: RawHandler = async (request, socket) => {
    const { data } = fileOf(request.target);
    await written(socket, Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nConnection: close\r\n\r\n'), data]));
    socket.end();
    return false;
  };

  test.each([
    ['in chunked transfer coding (keep-alive)', chunked],
    ['ended by closing the connection', closeDelimited],
  ] as const)(
    `when a source sends its body %s, for ${SIZES.join(', ')}, each alone and then 2 of each at once, then every download completes on its first attempt, byte for byte, with one request each`,
    async (_how, handler) => {
      const server = await serve(handler);
      const fetched = await downloadEverySize(service, server.url, media, (size, n) => `/media/${size}?download=${n}`, SIZES, 2);
      await expectWhole(service, fetched);
      expect(fetched.map((one) => ({ download: one.label, requests: server.requestsFor(one.target).length }))).toEqual(
        fetched.map((one) => ({ download: one.label, requests: 1 })),
      );
      await expectStillAnswering();
      await forget(service, fetched);
    },
    180_000,
  );
});

describe('a resumption that meets another file', () => {
  /**
   * The first response of each URL: the old file, cut off half-way by a reset, once the client has
   * had a moment to write what it got to disk (a server that stalls and dies, not one that lost
   * bytes in flight: the resumption is what is under test).
   */
  async function cutOff(socket: net.Socket, data: Buffer): Promise<boolean> {
    await written(socket, Buffer.concat([Buffer.from(fileHead(data, 0), 'latin1'), data.subarray(0, Math.floor(data.length / 2))]));
    await acknowledged(socket);
    await sleep(500);
    socket.resetAndDestroy();
    return false;
  }

  /** The requests for `target`, by what they asked for: the whole file, or the rest after the bytes on disk. */
  const asked = (server: RawServer, target: string) =>
    server
      .requestsFor(target)
      .map((request) => (request.headers.range === undefined ? 'whole' : /^bytes=[1-9]\d*-$/.test(request.headers.range) ? 'the rest' : request.headers.range));

  const original = () => bytes.get('above-64k.mp4')!;
  const changed = () => bytes.get('above-64k-changed.mp4')!;

  test.each([
    ['honours If-Range (a 200 with the whole new file)', true],
    ['ignores If-Range (a 206 of the new file, with its new ETag and Last-Modified)', false],
  ] as const)(
    'when a download is cut off half-way and its file, of the same size, has changed by the time it is resumed, and the source %s, then the download is the new file whole, never a splice',
    async (_how, honoursIfRange) => {
      const server = await serve(async (request, socket) => {
        if (server.requestsFor(request.target).length === 1) return cutOff(socket, original());
        const data = changed();
        const matches = request.headers['if-range'] === undefined || request.headers['if-range'] === etagOf(data);
        const from = honoursIfRange && !matches ? 0 : Math.min(rangeStart(request), data.length);
        await written(socket, Buffer.concat([Buffer.from(fileHead(data, from, [], etagOf(data), CHANGED_LAST_MODIFIED), 'latin1'), data.subarray(from)]));
        return true;
      });
      const target = `/media/above-64k.mp4?download=${nextDownload()}`;
      const [done] = await downloadAtOnce(service, [server.url + target]);
      // The resumption asked for the rest, met the new file, and (unless the source sent it whole
      // at once) asked for it whole: the one way to the new file whole.
      expect({ ...outcome(done!), asked: asked(server, target) }).toEqual({
        status: 'completed',
        attempts: 2,
        error: null,
        asked: honoursIfRange ? ['whole', 'the rest'] : ['whole', 'the rest', 'whole'],
      });
      const fetched = [{ label: 'changed file', target, source: media['above-64k-changed.mp4'], done: done! }];
      await expectWhole(service, fetched, () => 2);
      await expectStillAnswering();
      await forget(service, fetched);
    },
    60_000,
  );

  test('when a download is cut off half-way and the resuming 206 keeps the ETag but names another whole length, then the download starts over and is that other file whole, never a splice', async () => {
    // The source lies: another, longer file under the first file's ETag and date, so that its rest could follow the bytes on disk.
    const other = () => bytes.get('few-mb.mp4')!;
    const server = await serve(async (request, socket) => {
      if (server.requestsFor(request.target).length === 1) return cutOff(socket, original());
      const from = Math.min(rangeStart(request), other().length - 1);
      await written(socket, Buffer.concat([Buffer.from(fileHead(other(), from, [], etagOf(original())), 'latin1'), other().subarray(from)]));
      return true;
    });
    const target = `/media/above-64k.mp4?download=${nextDownload()}`;
    const [done] = await downloadAtOnce(service, [server.url + target]);
    expect({ ...outcome(done!), asked: asked(server, target) }).toEqual({
      status: 'completed',
      attempts: 2,
      error: null,
      asked: ['whole', 'the rest', 'whole'],
    });
    const fetched = [{ label: 'other file', target, source: media['few-mb.mp4'], done: done! }];
    await expectWhole(service, fetched, () => 2);
    await forget(service, fetched);
  }, 60_000);

  test('when a download is cut off half-way and the resuming 206, delimited by its close, runs on past its Content-Range, then no byte past the file reaches it and the download fails as source_http_error', async () => {
    const server = await serve(async (request, socket) => {
      if (server.requestsFor(request.target).length === 1) return cutOff(socket, original());
      const data = original();
      const from = rangeStart(request);
      const head = [
        'HTTP/1.1 206 Partial Content',
        `Content-Range: bytes ${from}-${data.length - 1}/${data.length}`,
        'Content-Type: video/mp4',
        `ETag: ${etagOf(data)}`,
        'Connection: close',
        '',
        '',
      ];
      await written(socket, Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), data.subarray(from), Buffer.from('JUNK!JUNK!')]));
      socket.end();
      return false;
    });
    const target = `/media/above-64k.mp4?download=${nextDownload()}`;
    const [done] = await downloadAtOnce(service, [server.url + target]);
    expect(outcome(done!)).toEqual({
      status: 'failed',
      attempts: 2,
      error: expect.stringMatching(/^source_http_error: The source sent more than it said it would: its answer was to end at byte \d+/),
    });
    expect(done!.error?.retryable).toBe(false);
    expect(asked(server, target)).toEqual(['whole', 'the rest']);
    await expectStillAnswering();
  }, 60_000);

  test('when a download is cut off half-way and the source answers the resuming Range with a 200 and the whole file, then the download is that file whole, not the part on disk and the whole file after it', async () => {
    const server = await serve(async (request, socket) => {
      const { data } = fileOf(request.target);
      if (server.requestsFor(request.target).length === 1) return cutOff(socket, data);
      await written(socket, Buffer.concat([Buffer.from(fileHead(data, 0), 'latin1'), data]));
      return true;
    });
    const targets = (['above-64k.mp4', 'few-mb.mp4'] as const).map((size) => ({ size, target: `/media/${size}?download=${nextDownload()}` }));
    const done = await downloadAtOnce(
      service,
      targets.map(({ target }) => server.url + target),
    );
    expect(targets.map(({ size, target }, i) => ({ size, ...outcome(done[i]!), asked: asked(server, target) }))).toEqual(
      targets.map(({ size }) => ({ size, status: 'completed', attempts: 2, error: null, asked: ['whole', 'the rest'] })),
    );
    const fetched = targets.map(({ size, target }, i) => ({ label: size, target, source: media[size], done: done[i]! }));
    await expectWhole(service, fetched, () => 2);
    await expectStillAnswering();
    await forget(service, fetched);
  }, 60_000);
});

describe('an answer that is not valid HTTP', () => {
  test('when a source sends a chunked body whose first size is not hex in the same write as its head, then the download fails as source_http_error on its first attempt instead of holding its worker for ever', async () => {
    const server = await serve(async (_request, socket) => {
      await written(socket, 'HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nTransfer-Encoding: chunked\r\n\r\nZZZZ\r\nabc\r\n0\r\n\r\n');
      return false;
    });
    const [done] = await downloadAtOnce(service, [`${server.url}/media/bad-chunk.mp4?download=${nextDownload()}`]);
    expect(outcome(done!)).toEqual({
      status: 'failed',
      attempts: 1,
      error: expect.stringMatching(/^source_http_error: The source's answer is not valid HTTP/),
    });
    await expectStillAnswering();
  }, 60_000);
});

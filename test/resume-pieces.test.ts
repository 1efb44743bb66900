import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { SourceHttp } from '../src/net/guarded-client.ts';
import { fetchDirect } from '../src/sources/direct/index.ts';
import { storedVersion } from '../src/sources/direct/version.ts';
import { LocalTransfers } from '../src/storage/local/local-transfers.ts';
import { parseRange } from './support/http-ranges.ts';

// A direct file that an earlier attempt over several connections left with its end kept and a gap
// before it: the retry fetches the gap, not the end again. fetchDirect on a real transfer folder,
// against a real server that counts what it sends.

const SIZE = 6 * 1024 * 1024;
const KEPT_FROM = 2 * 1024 * 1024;
const ETAG = '"v1"';
const BYTES_PER_SECOND = 4 * 1024 * 1024;

let dir: string;
let server: http.Server;
const body = randomBytes(SIZE);
const sent: Array<{ range: string | undefined; bytes: number }> = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'vds-resume-pieces-'));
  server = http.createServer((req, res) => {
    const range = req.headers.range && req.headers['if-range'] === ETAG ? parseRange(req.headers.range, SIZE) : undefined;
    if (range === 'unsatisfiable') throw new Error(`no test asks for ${req.headers.range}`);
    const { start, end } = range ?? { start: 0, end: SIZE - 1 };
    res.writeHead(range ? 206 : 200, {
      'Content-Length': end - start + 1,
      'Accept-Ranges': 'bytes',
      ETag: ETAG,
      ...(range && { 'Content-Range': `bytes ${start}-${end}/${SIZE}` }),
    });
    const record = { range: req.headers.range, bytes: 0 };
    sent.push(record);
    async function* throttled() {
      for (let at = start; at <= end; at += 64 * 1024) {
        const chunk = body.subarray(at, Math.min(end + 1, at + 64 * 1024));
        record.bytes += chunk.length;
        yield chunk;
        await sleep((chunk.length / BYTES_PER_SECOND) * 1000);
      }
    }
    pipeline(throttled(), res).catch(() => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

test('when the end of a file is kept and the bytes before it are not, then the retry asks for the gap and lets the answer go at its end', async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/file.bin`;
  const transfer = new LocalTransfers().open('one', dir);
  await transfer.begin(url, SIZE);
  await pipeline(Readable.from([body.subarray(KEPT_FROM)]), transfer.writer(KEPT_FROM));

  const fetched = await fetchDirect({
    url,
    http: new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: 5000, idleTimeoutMs: 10_000, minBytesPerSecond: 0 }),
    workDir: dir,
    transfer: new LocalTransfers().open('one', dir),
    signal: new AbortController().signal,
    maxFileBytes: 1024 ** 3,
    directConnections: 8,
    validator: storedVersion({ etag: ETAG, lastModified: null }),
    rememberValidator: async () => {},
    progress: () => {},
    processing: async () => {},
    phaseEnded: () => {},
  });

  expect(await fetched.sha256()).toBe(createHash('sha256').update(body).digest('hex'));
  expect(
    createHash('sha256')
      .update(await readFile(fetched.path))
      .digest('hex'),
  ).toBe(await fetched.sha256());
  expect(sent.map((request) => request.range)).toEqual(['bytes=0-']);
  // What was on its way when the answer was let go is all that comes past the gap.
  expect(sent[0]!.bytes).toBeLessThan(KEPT_FROM + 1024 * 1024);
});

import { createHash } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { DownloadError } from '../src/core/errors.ts';
import type { BulkResponse } from '../src/sources/bulk-get.ts';
import { SourceHttp, discard } from '../src/sources/http.ts';

// The bulk client (bulk-get.ts) beside Node's own: it reads the pieces of a direct file whose
// first response came through Node's client, so what it makes of an answer's head, and what it
// sends, must agree with Node's client, or a source that both read alike has its pieces refused,
// or taken for another version of the file (a download that can never complete).

const BODY = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 251));
const ETAG = '"v1"';

/** What the source answers, given the request's head: the bytes it writes, then it closes. */
type Answer = (request: string) => Buffer | string;

let server: net.Server;
let origin: string;
const answers = new Map<string, Answer>();
const requests: Buffer[] = [];
let client: SourceHttp;

beforeAll(async () => {
  server = net.createServer((socket) => {
    socket.on('error', () => {});
    let request = Buffer.alloc(0);
    socket.on('data', (bytes) => {
      request = Buffer.concat([request, bytes]);
      if (request.indexOf('\r\n\r\n') < 0) return;
      requests.push(request);
      const text = request.toString('latin1');
      const path = text.split(' ')[1]!;
      const answer = answers.get(path.split('?')[0]!)!(text);
      socket.end(typeof answer === 'string' ? Buffer.from(answer, 'latin1') : answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: 5_000, idleTimeoutMs: 2_000, minBytesPerSecond: 0 });
});

afterAll(async () => {
  await client?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/** A 206 of the whole body, its head's lines after the status line given. */
function partial(lines: string[]): Buffer {
  const head = [
    'HTTP/1.1 206 Partial Content',
    ...lines,
    `Content-Range: bytes 0-${BODY.length - 1}/${BODY.length}`,
    `Content-Length: ${BODY.length}`,
    'Connection: close',
  ];
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), BODY]);
}

function bulk(path: string, headers: Record<string, string> = { range: `bytes=0-${BODY.length - 1}` }): Promise<BulkResponse> {
  return client.getBulk(`${origin}${path}`, { headers, signal: new AbortController().signal });
}

/** The body read whole, as a piece reads it; its sha256. */
async function bodyOf(response: BulkResponse): Promise<string> {
  const writer = new PassThrough();
  const hash = createHash('sha256');
  writer.on('data', (bytes: Buffer) => hash.update(bytes));
  await response.readInto(writer, (chunk) => ({ bytes: chunk, enough: false }));
  return hash.digest('hex');
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

test('when a source sends its ETag and Last-Modified twice (as a proxy that adds them again does), then the bulk client reads the same validators as Node’s client, the one version of the file', async () => {
  answers.set('/twice', () =>
    partial([`ETag: ${ETAG}`, `ETag: ${ETAG}`, 'Last-Modified: Wed, 01 Jan 2025 00:00:00 GMT', 'Last-Modified: Wed, 01 Jan 2025 00:00:00 GMT']),
  );
  const node = await client.get(`${origin}/twice`);
  discard(node);
  const response = await bulk('/twice');
  response.discard();
  expect({ etag: response.headers.etag, lastModified: response.headers['last-modified'] }).toEqual({
    etag: node.headers.etag,
    lastModified: node.headers['last-modified'],
  });
  expect(response.headers.etag).toBe(ETAG);
});

test('when a source answers 100 Continue and 103 Early Hints before its 206, then the bulk client takes the 206 as the answer and reads its body whole', async () => {
  answers.set('/interim', () =>
    Buffer.concat([
      Buffer.from('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n', 'latin1'),
      partial([`ETag: ${ETAG}`]),
    ]),
  );
  const response = await bulk('/interim');
  expect({ status: response.status, etag: response.headers.etag, length: response.length, link: response.headers.link }).toEqual({
    status: 206,
    etag: ETAG,
    length: BODY.length,
    link: undefined,
  });
  expect(await bodyOf(response)).toBe(sha256(BODY));
});

test('when a source sends interim answers without end, then the bulk client fails on the head limit rather than reading them for ever', async () => {
  answers.set('/endless-interim', () => 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n'.repeat(2000));
  await expect(bulk('/endless-interim')).rejects.toThrow(DownloadError);
});

test('when the file’s ETag holds obs-text (bytes over 0x7f), then the bulk client sends it in If-Range byte for byte, as Node’s client does', async () => {
  const etag = '"caf\xe9"';
  answers.set('/obs-text', () => partial([`ETag: ${etag}`]));
  const node = await client.get(`${origin}/obs-text`, { headers: { 'if-range': etag } });
  discard(node);
  const response = await bulk('/obs-text', { range: `bytes=0-${BODY.length - 1}`, 'if-range': etag });
  response.discard();
  const [fromNode, fromBulk] = requests.slice(-2).map((request) => /\r\nif-range: ([^\r]*)\r\n/i.exec(request.toString('latin1'))?.[1]);
  expect(fromNode).toBe(etag);
  expect(fromBulk).toBe(fromNode);
  expect(response.headers.etag).toBe(node.headers.etag);
});

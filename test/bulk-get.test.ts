import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net, { type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../src/core/errors.ts';
import { fileWriter } from '../src/files/file-writer.ts';
import { bulkGet, requestHead, type BulkRequest } from '../src/net/bulk-get.ts';
import { discard, SourceHttp } from '../src/net/guarded-client.ts';
import { parseHead, plainLength } from '../src/net/response-head.ts';

// The client that reads a direct file's pieces from the socket into reused buffers, against raw
// TCP servers on 127.0.0.1 that send exactly the bytes each case needs: what a source sends is an
// attacker's, and every answer that is not plainly a body of its stated length fails or is left to
// Node's own client. Where both clients read a source (a file's first response comes through
// Node's, its pieces through this one), they must read and send alike, or a source's pieces are
// refused or taken for another version of the file.

type Script = (socket: Socket, request: string) => Promise<void> | void;

const servers: net.Server[] = [];
const sockets = new Set<Socket>();
let files: string;
let written = 0;

/** Node's client, as the service holds it, to read the same sources with. */
const node = new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: 2000, idleTimeoutMs: 2000, minBytesPerSecond: 0 });

beforeAll(async () => {
  files = await mkdtemp(path.join(os.tmpdir(), 'bulk-get-'));
});

afterAll(async () => {
  await rm(files, { recursive: true, force: true });
  await node.close();
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server that reads a request's head and then runs `script` on the socket. */
async function serve(script: Script): Promise<URL> {
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let received = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) {
        socket.removeAllListeners('data');
        void Promise.resolve(script(socket, received)).catch(() => socket.destroy());
      }
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/file.mp4`);
}

function request(url: URL, overrides: Partial<BulkRequest> = {}): BulkRequest {
  return { url, headers: { range: 'bytes=0-' }, signal: new AbortController().signal, connectTimeoutMs: 2000, idleTimeoutMs: 1000, ...overrides };
}

/**
 * The service's file writer, into a file of its own, noting what becomes of it: `ended` when it
 * took its bytes as whole, then `finish` and `close`. Each write takes `delayMs` longer (a slow disk).
 */
function keeper(delayMs = 0) {
  const file = path.join(files, `${++written}.part`);
  const events: string[] = [];
  const writer = fileWriter(file, 0, {
    written: () => sleep(delayMs),
    ended: () => void events.push('ended'),
  });
  writer.on('finish', () => events.push('finish'));
  const closed = new Promise<void>((resolve) => writer.once('close', resolve)).then(() => void events.push('close'));
  writer.on('error', () => {});
  return { writer, events, closed, bytes: () => readFile(file) };
}

/** The head of a 206 whose body is `length` bytes, with `fields` before its Content-Length. */
const partialHead = (length: number, fields: string[] = []) => ['HTTP/1.1 206 Partial Content', ...fields, `Content-Length: ${length}`, '', ''].join('\r\n');

const takeAll = (chunk: Buffer) => ({ bytes: chunk, enough: false });
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

test('when the head comes a byte at a time, its blank line split across reads, and the body in odd chunks, then the body is written whole', async () => {
  const body = randomBytes(3 * 1024 * 1024 + 17);
  const url = await serve(async (socket) => {
    const head = `HTTP/1.1 206 Partial Content\r\nContent-Length: ${body.length}\r\nContent-Range: bytes 0-${body.length - 1}/${body.length}\r\n\r\n`;
    for (const byte of head) {
      socket.write(byte);
      await sleep(1);
    }
    for (let at = 0; at < body.length; at += 777_777) socket.write(body.subarray(at, at + 777_777));
    socket.end();
  });
  const response = await bulkGet(request(url));
  expect({ status: response.status, length: response.length, range: response.headers['content-range'] }).toEqual({
    status: 206,
    length: body.length,
    range: `bytes 0-${body.length - 1}/${body.length}`,
  });
  const into = keeper();
  await response.readInto(into.writer, takeAll);
  await into.closed;
  expect(sha(await into.bytes())).toBe(sha(body));
  expect(into.events).toEqual(['ended', 'finish', 'close']);
});

test('when the disk is slower than the idle timeout between writes, then reading waits for it and the body comes whole, not as a stalled source', async () => {
  const body = randomBytes(8 * 1024 * 1024);
  const url = await serve((socket) => {
    socket.write(partialHead(body.length));
    socket.end(body);
  });
  const response = await bulkGet(request(url, { idleTimeoutMs: 150 }));
  const into = keeper(60);
  await response.readInto(into.writer, takeAll);
  expect(sha(await into.bytes())).toBe(sha(body));
});

test('when the event loop is held up for longer than the idle timeout while the source goes on sending, then the body comes whole, not as a stalled source', async () => {
  // The source in a process of its own, so that it goes on sending while this one is held up.
  const source = spawn(process.execPath, [
    '-e',
    `const net = require('node:net');
     const server = net.createServer((socket) => {
       socket.once('data', () => {
         socket.write('HTTP/1.1 206 Partial Content\\r\\nContent-Length: ${64 * 1024 * 40}\\r\\n\\r\\n');
         let sent = 0;
         const timer = setInterval(() => {
           socket.write(Buffer.alloc(64 * 1024, sent % 251));
           if (++sent === 40) { clearInterval(timer); socket.end(); }
         }, 10);
       });
     });
     server.listen(0, '127.0.0.1', () => console.log(server.address().port));`,
  ]);
  try {
    const [port] = (await once(source.stdout, 'data')) as [Buffer];
    const response = await bulkGet(request(new URL(`http://127.0.0.1:${String(port).trim()}/file.mp4`), { idleTimeoutMs: 100 }));
    const into = keeper();
    const reading = response.readInto(into.writer, takeAll);
    // Held up, as a long collection or a busy turn of the loop would hold it, while bytes arrive.
    const until = Date.now() + 300;
    while (Date.now() < until);
    await reading;
    expect((await into.bytes()).length).toBe(64 * 1024 * 40);
  } finally {
    source.kill();
  }
});

test('when the source sends more than its Content-Length, then only the stated bytes are written', async () => {
  const url = await serve((socket) => {
    socket.write(`${partialHead(5)}hello, and more`);
  });
  const response = await bulkGet(request(url));
  const into = keeper();
  await response.readInto(into.writer, takeAll);
  expect((await into.bytes()).toString()).toBe('hello');
});

test('when the source closes the connection half-way through the body, then the read fails as retryable, and the writer keeps what came but is cut short, never taken as whole', async () => {
  const url = await serve((socket) => {
    socket.write(partialHead(1000));
    socket.end(Buffer.alloc(400, 1));
  });
  const response = await bulkGet(request(url));
  const into = keeper();
  await expect(response.readInto(into.writer, takeAll)).rejects.toMatchObject({ code: 'source_unreachable', retryable: true });
  await into.closed;
  expect({ events: into.events, written: (await into.bytes()).length }).toEqual({ events: ['finish', 'close'], written: 400 });
});

test('when the source stops sending mid-body, then the read fails as a timeout after the idle timeout', async () => {
  const url = await serve((socket) => {
    socket.write(partialHead(1000));
    socket.write(Buffer.alloc(10));
  });
  const response = await bulkGet(request(url, { idleTimeoutMs: 200 }));
  const started = Date.now();
  await expect(response.readInto(keeper().writer, takeAll)).rejects.toMatchObject({ code: 'source_timeout' });
  expect(Date.now() - started).toBeLessThan(5000);
});

test('when the reader has had enough before the body ends, then the connection is let go and the writer finishes with what was taken', async () => {
  const url = await serve((socket) => {
    socket.write(partialHead(100));
    socket.write(Buffer.alloc(100, 7));
  });
  const response = await bulkGet(request(url));
  const into = keeper();
  await response.readInto(into.writer, (chunk) => ({ bytes: chunk.subarray(0, 30), enough: true }));
  await into.closed;
  expect({ bytes: (await into.bytes()).length, events: into.events }).toEqual({ bytes: 30, events: ['ended', 'finish', 'close'] });
});

test('when the taker throws (more than the file holds), then the read fails with its error and the writer is cut short, never taken as whole', async () => {
  const url = await serve((socket) => {
    socket.write(partialHead(100));
    socket.write(Buffer.alloc(100, 7));
  });
  const response = await bulkGet(request(url));
  const into = keeper();
  await expect(
    response.readInto(into.writer, () => {
      throw new Error('too much');
    }),
  ).rejects.toThrow('too much');
  await into.closed;
  expect(into.events).toEqual(['finish', 'close']);
});

test.each([
  ['a head over 16 KiB', `HTTP/1.1 206 OK\r\nX-Junk: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 'source_http_error'],
  ['a status line that is not HTTP/1.x', 'ICY 200 OK\r\nContent-Length: 1\r\n\r\nx', 'source_http_error'],
  ['a folded header line', 'HTTP/1.1 206 OK\r\nContent-Length: 1\r\n folded\r\n\r\nx', 'source_http_error'],
  ['a bare LF between fields', 'HTTP/1.1 206 OK\nContent-Length: 1\r\n\r\nx', 'source_http_error'],
  ['two Content-Lengths that differ', 'HTTP/1.1 206 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx', 'source_http_error'],
  ['a close before any answer', '', 'source_unreachable'],
])('when the source answers with %s, then the request fails as the contract error %s', async (_case, answer, code) => {
  const url = await serve((socket) => {
    socket.end(answer);
  });
  await expect(bulkGet(request(url))).rejects.toMatchObject({ code });
});

test('when the source answers a range chunked or compressed, then the answer has no length here and reading it fails without writing', async () => {
  for (const framing of ['Transfer-Encoding: chunked', 'Content-Encoding: gzip\r\nContent-Length: 4']) {
    const url = await serve((socket) => {
      socket.write(`HTTP/1.1 206 Partial Content\r\n${framing}\r\n\r\n`);
    });
    const response = await bulkGet(request(url));
    expect({ status: response.status, length: response.length }).toEqual({ status: 206, length: null });
    const into = keeper();
    await expect(response.readInto(into.writer, takeAll)).rejects.toMatchObject({ code: 'source_http_error' });
    await into.closed;
    expect({ bytes: (await into.bytes()).length, events: into.events }).toEqual({ bytes: 0, events: ['close'] });
  }
});

test('when the download is stopped while the source holds its answer back, then the request fails with the reason at once', async () => {
  const url = await serve(() => {});
  const stop = new AbortController();
  const asked = bulkGet(request(url, { signal: stop.signal, idleTimeoutMs: 30_000 }));
  await sleep(50);
  const reason = new Error('cancelled');
  stop.abort(reason);
  await expect(asked).rejects.toBe(reason);
});

test('when a header to send holds a line break, or would set Host, then no request is made of it', () => {
  const url = new URL('http://127.0.0.1:1/a?b=c');
  expect(requestHead(url, { 'x-site': 'a\r\nInjected: yes' })).toBeNull();
  expect(requestHead(url, { 'bad name': 'a' })).toBeNull();
  expect(requestHead(url, { Host: 'elsewhere' })).toBeNull();
  expect(requestHead(url, { range: 'bytes=0-9' })).toBe('GET /a?b=c HTTP/1.1\r\nHost: 127.0.0.1:1\r\nrange: bytes=0-9\r\nconnection: close\r\n\r\n');
});

test('when a head is read, then names are case-insensitive, repeated fields are joined, and only a plain Content-Length frames a body', () => {
  const head = parseHead(Buffer.from('HTTP/1.1 206 Partial Content\r\nETag: "v1"\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 10\r\nContent-Length: 10'));
  expect(head).toEqual({ status: 206, headers: { etag: '"v1"', 'x-a': '1, 2', 'content-length': '10' } });
  expect(plainLength({ 'content-length': '10' })).toBe(10);
  expect(plainLength({ 'content-length': '10', 'content-encoding': 'identity' })).toBe(10);
  expect(plainLength({ 'content-length': '-1' })).toBeNull();
  expect(plainLength({ 'content-length': '1e3' })).toBeNull();
  expect(plainLength({ 'content-length': '9'.repeat(16) })).toBeNull();
  expect(plainLength({})).toBeNull();
});

test('when a source sends its ETag and Last-Modified twice (as a proxy that adds them again does), then the bulk client reads the same validators as Node’s client', async () => {
  const fields = ['ETag: "v1"', 'ETag: "v1"', 'Last-Modified: Wed, 01 Jan 2025 00:00:00 GMT', 'Last-Modified: Wed, 01 Jan 2025 00:00:00 GMT'];
  const url = await serve((socket) => {
    socket.end(`${partialHead(1, fields)}x`);
  });
  const fromNode = await node.get(url.toString());
  discard(fromNode);
  const response = await bulkGet(request(url));
  response.discard();
  const validators = (headers: Record<string, string | undefined>) => ({ etag: headers.etag, lastModified: headers['last-modified'] });
  expect(validators(response.headers)).toEqual(validators(fromNode.headers));
  expect(response.headers.etag).toBe('"v1"');
});

test('when a source answers 100 Continue and 103 Early Hints before its 206, then the 206 is the answer and its body is read whole', async () => {
  const body = randomBytes(100_000);
  const url = await serve((socket) => {
    socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n');
    socket.end(Buffer.concat([Buffer.from(partialHead(body.length, ['ETag: "v1"'])), body]));
  });
  const response = await bulkGet(request(url));
  expect({ status: response.status, etag: response.headers.etag, length: response.length, link: response.headers.link }).toEqual({
    status: 206,
    etag: '"v1"',
    length: body.length,
    link: undefined,
  });
  const into = keeper();
  await response.readInto(into.writer, takeAll);
  expect(sha(await into.bytes())).toBe(sha(body));
});

test('when a source sends interim answers without end, then the request fails on the head limit rather than reading them for ever', async () => {
  const url = await serve((socket) => {
    socket.end('HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n'.repeat(2000));
  });
  await expect(bulkGet(request(url))).rejects.toThrow(DownloadError);
});

test('when the file’s ETag holds obs-text (bytes over 0x7f), then its If-Range goes byte for byte, as Node’s client sends it', async () => {
  const etag = '"caf\xe9"';
  const asked: string[] = [];
  const url = await serve((socket, received) => {
    asked.push(received);
    socket.end(Buffer.from(`${partialHead(1, [`ETag: ${etag}`])}x`, 'latin1'));
  });
  discard(await node.get(url.toString(), { headers: { 'if-range': etag } }));
  const response = await bulkGet(request(url, { headers: { range: 'bytes=0-0', 'if-range': etag } }));
  response.discard();
  const ifRanges = asked.map((head) => /\r\nif-range: ([^\r]*)\r\n/i.exec(head)?.[1]);
  expect(ifRanges).toEqual([etag, etag]);
  expect(response.headers.etag).toBe(etag);
});

import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../src/core/errors.ts';
import { SourceHttp, contentLength, requireWholeBody, transportError, type SourceResponse } from '../src/net/guarded-client.ts';

// One exchange with a source, as the service sees it. The idle timeout holds the source to
// sending, not the service to reading: a body is read ahead of its reader up to a bound, and a
// source that sends nothing while the service could take more is stalled, whether or not the
// reader was there; a body that waits on its reader beyond that bound (while the service decides
// what a URL is, or its disk catches up) is not. What arrived before a reset is never lost to it.
// Answers that are no answer to a GET end it at once.

const IDLE_MS = 500;
const SENT = 300_000;
/** More than the service reads ahead, the socket buffers of both ends and the source's own can hold together. */
const SENT_LARGE = 24 * 1024 * 1024;

let server: http.Server;
let origin: string;
let client: SourceHttp;

let silent: net.Server;
let silentOrigin: string;
let resetting: net.Server;
let resettingOrigin: string;

beforeAll(async () => {
  // Takes the request and says nothing more, after half a status line for /half-headers.
  // /bad-chunk: a head and, in the same write, a chunked body whose first size is not hex; left open.
  // /drip: a head that never ends, a header field sent every fifth of an idle timeout.
  silent = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', (request) => {
      const target = request.toString('latin1').split(' ')[1];
      if (target === '/half-headers') socket.write('HTTP/1.1 200 OK\r\nContent-Type: vid');
      if (target === '/bad-chunk') socket.write('HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nTransfer-Encoding: chunked\r\n\r\nZZZZ\r\nabc\r\n0\r\n\r\n');
      if (target === '/drip') {
        socket.write('HTTP/1.1 200 OK\r\n');
        const drip = setInterval(() => socket.write('X-Drip: y\r\n'), IDLE_MS / 5);
        socket.on('close', () => clearInterval(drip));
      }
    });
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentOrigin = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  // A body delimited by its connection's close, whose connection is reset once the body has left.
  resetting = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => {
      const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nConnection: close\r\n\r\n', 'latin1');
      socket.write(Buffer.concat([head, Buffer.alloc(SENT, 1)]), () => setTimeout(() => socket.resetAndDestroy(), 50));
    });
  });
  await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
  resettingOrigin = `http://127.0.0.1:${(resetting.address() as AddressInfo).port}`;
  server = http.createServer((req, res) => {
    if (req.url === '/bad-location') return void res.writeHead(302, { location: 'http://[::1' }).end();
    if (req.url === '/switches') {
      // Node's server would not switch on its own: the socket is taken over, as a hostile source would.
      req.socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nsome bytes');
      return;
    }
    const whole = req.url === '/whole';
    const sent = req.url === '/stalls-large' ? SENT_LARGE : SENT;
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': whole ? sent : sent * 10 });
    // /whole sends everything; /stalls and /stalls-large send a tenth of what they declare and then nothing.
    if (whole) res.end(Buffer.alloc(sent, 1));
    else res.write(Buffer.alloc(sent, 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = new SourceHttp({ allowPrivateAddresses: true, connectTimeoutMs: 5_000, idleTimeoutMs: IDLE_MS, minBytesPerSecond: 0 });
});

afterAll(async () => {
  await new Promise((resolve) => silent.close(resolve));
  await new Promise((resolve) => resetting.close(resolve));
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Reads the body after leaving it unread for `waitMs`; resolves with the bytes read, or the error and when it came. */
async function readLate(response: SourceResponse, waitMs: number): Promise<{ bytes: number; error?: unknown; afterReadingMs: number }> {
  response.body.pause();
  await sleep(waitMs);
  const started = Date.now();
  let bytes = 0;
  try {
    for await (const chunk of response.body) bytes += (chunk as Buffer).length;
    requireWholeBody(response, bytes, contentLength(response));
    return { bytes, afterReadingMs: Date.now() - started };
  } catch (error) {
    return { bytes, error, afterReadingMs: Date.now() - started };
  }
}

test('when a whole body waits unread for several idle timeouts, then it is still read whole', async () => {
  const outcome = await readLate(await client.get(`${origin}/whole`), IDLE_MS * 4 + 50);
  expect(outcome).toEqual({ bytes: SENT, afterReadingMs: expect.any(Number) });
});

test('when a body within the read-ahead waits unread and the source stalls meanwhile, then the reader gets every byte sent and then source_timeout, without another idle timeout', async () => {
  // The service was ready to take more all along: the source's silence is its own.
  const outcome = await readLate(await client.get(`${origin}/stalls`), IDLE_MS * 4 + 50);
  expect(outcome.bytes).toBe(SENT);
  expect(outcome.error).toBeInstanceOf(DownloadError);
  expect(outcome.error).toMatchObject({ code: 'source_timeout', retryable: true });
  expect(outcome.afterReadingMs).toBeLessThan(IDLE_MS * 0.8);
});

test('when a body beyond the read-ahead waits unread for several idle timeouts and the source then stalls, then reading ends as source_timeout about one idle timeout after the last byte', async () => {
  const outcome = await readLate(await client.get(`${origin}/stalls-large`), IDLE_MS * 4 + 50);
  expect(outcome.bytes).toBe(SENT_LARGE);
  expect(outcome.error).toBeInstanceOf(DownloadError);
  expect(outcome.error).toMatchObject({ code: 'source_timeout', retryable: true });
  // Not at once when the reader comes back (its wait is not the source's), and not never.
  expect(outcome.afterReadingMs).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
  expect(outcome.afterReadingMs).toBeLessThan(IDLE_MS * 6);
});

test('when a body waits unread and the source resets the connection right after its last byte, then the reader still gets every byte that arrived before the reset', async () => {
  const outcome = await readLate(await client.get(`${resettingOrigin}/`), IDLE_MS / 2);
  expect(outcome.bytes).toBe(SENT);
  expect(outcome.error).toMatchObject({ code: 'ECONNRESET' });
});

test('when a source answers a GET with 101 Switching Protocols, then the request fails as source_http_error at once instead of waiting', async () => {
  const started = Date.now();
  await expect(client.get(`${origin}/switches`)).rejects.toMatchObject({ code: 'source_http_error', retryable: false });
  expect(Date.now() - started).toBeLessThan(IDLE_MS);
});

test.each(['/no-headers', '/half-headers'])(
  'when a source takes the request and then says nothing (%s), then the request fails as source_timeout after the idle timeout',
  async (path) => {
    const started = Date.now();
    await expect(client.get(`${silentOrigin}${path}`)).rejects.toMatchObject({ code: 'source_timeout', retryable: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
  },
);

test('when a source sends a chunked body that is not valid HTTP in the same write as its head, then reading it fails as source_http_error at once instead of waiting for ever', async () => {
  const response = await client.get(`${silentOrigin}/bad-chunk`);
  const read = await Promise.race([readLate(response, 0), sleep(IDLE_MS * 10, 'still waiting' as const)]);
  expect(read).not.toBe('still waiting');
  expect(transportError((read as { error?: unknown }).error)).toMatchObject({ code: 'source_http_error' });
});

test('when a source drips its head, a header field within every idle timeout, then the request fails as source_timeout after one idle timeout, by either way of asking', async () => {
  for (const ask of [
    () => client.get(`${silentOrigin}/drip`),
    () => client.getBulk(`${silentOrigin}/drip`, { headers: {}, signal: new AbortController().signal }),
  ]) {
    const started = Date.now();
    await expect(ask()).rejects.toMatchObject({ code: 'source_timeout', retryable: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS * 0.8);
    expect(Date.now() - started).toBeLessThan(IDLE_MS * 10);
  }
});

test('when a source redirects to something that is not a URL, then the request fails as source_http_error, not as an internal error', async () => {
  await expect(client.get(`${origin}/bad-location`)).rejects.toMatchObject({ code: 'source_http_error', retryable: false });
});

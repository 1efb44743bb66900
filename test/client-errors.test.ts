import net from 'node:net';
import { parse } from 'yaml';
import { useService } from './support/harness.ts';

// Requests that Node's HTTP parser refuses never reach Express, so these go over raw sockets:
// supertest (and Node's own client) would refuse to send them in the first place.

type Problem = { type: string; title: string; status: number; detail: string };
type RawAnswer = { statusLine: string; headers: Record<string, string>; body: string };

const { app } = useService({ role: 'api' });

function connect(): net.Socket {
  const { hostname, port } = new URL(app.service.url);
  return net.connect(Number(port), hostname);
}

/** Writes `request` as it is and reads everything the server sends until it closes the connection. */
function sendRaw(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect();
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) {
        reject(new Error(`no complete answer before the server closed the connection: ${JSON.stringify(text)}`));
        return;
      }
      const [statusLine = '', ...fields] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()]));
      resolve({ statusLine, headers, body: text.slice(end + 4) });
    });
    socket.write(request);
  });
}

function expectProblem(answer: RawAnswer, status: number): Problem {
  expect(answer.statusLine).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.headers.connection).toBe('close');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const problem = JSON.parse(answer.body) as Problem;
  expect(problem).toEqual({ type: 'about:blank', title: expect.any(String), status, detail: expect.any(String) });
  return problem;
}

/** The service still answers a well-formed request: a refused one cost it nothing. */
async function expectStillServing(): Promise<void> {
  const res = await app.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11');
  expect(res.status).toBe(404);
}

describe('requests the HTTP parser refuses', () => {
  test('when the header section is over 16 KiB, then 431 problem+json and the connection is closed', async () => {
    const answer = await sendRaw(`GET /downloads HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(expectProblem(answer, 431).detail).toMatch(/header/i);
    await expectStillServing();
  });

  test('when a header value holds a control character, then 400 problem+json and the connection is closed', async () => {
    const answer = await sendRaw('POST /downloads HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: a\x01b\r\nContent-Length: 0\r\n\r\n');
    expectProblem(answer, 400);
    await expectStillServing();
  });

  test('when the request line is not HTTP at all, then 400 problem+json', async () => {
    expectProblem(await sendRaw('HELLO\r\n\r\n'), 400);
  });

  test('when the client resets the connection right after a malformed request, then the service goes on serving', async () => {
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const socket = connect();
        socket.on('error', () => {});
        await new Promise<void>((resolve) => socket.once('connect', resolve));
        socket.write(`GET /downloads HTTP/1.1\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\nBad\x01: x\r\n`);
        socket.resetAndDestroy();
      }),
    );
    await expectStillServing();
  });
});

describe('requests in absolute form', () => {
  // What a client sends to a proxy, and RFC 9112 (3.2.2) has every server accept: the target is the
  // whole URL, and its host, not the Host header, is the one the request is for.

  test.each([
    ['its own host', () => new URL(app.service.url).host],
    ['another host', () => 'elsewhere.example:8443'],
  ])('when GET /downloads comes in absolute form for %s, then it is answered as the path is', async (_case, host) => {
    const answer = await sendRaw(`GET http://${host()}/downloads?limit=1 HTTP/1.1\r\nHost: ${new URL(app.service.url).host}\r\nConnection: close\r\n\r\n`);
    expect(answer.statusLine).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(answer.body)).toEqual({ items: expect.any(Array), next_cursor: null });
  });

  test('when a request in absolute form names another host than its Host header, then the links it gets are built on the target host', async () => {
    const answer = await sendRaw(`GET http://vds.example:8080/openapi.yaml HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(answer.statusLine).toMatch(/^HTTP\/1\.1 200 /);
    expect((parse(answer.body) as { servers: { url: string }[] }).servers.map((server) => server.url)).toEqual(['http://vds.example:8080']);
  });

  test('when the target is not a path and not an absolute URL the service reads (an IPv6 zone), then 400 problem', async () => {
    const answer = await sendRaw(`GET http://[fe80::1%25eth0]/download/a.b HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expectProblem(answer, 400);
  });

  test.each([
    ['HTTP/1.0 without Host', 'GET /openapi.yaml HTTP/1.0\r\n\r\n'],
    ['a Host of control bytes', 'GET /openapi.yaml HTTP/1.1\r\nHost: a\x81b\x9b[31m\r\nConnection: close\r\n\r\n'],
    ['a Host with a path', 'GET /openapi.yaml HTTP/1.1\r\nHost: evil.example/x"y\r\nConnection: close\r\n\r\n'],
  ])('when a request comes with %s, then its links are built on the address it reached', async (_case, request) => {
    const answer = await sendRaw(request);
    expect(answer.statusLine).toMatch(/^HTTP\/1\.1 200 /);
    expect((parse(answer.body) as { servers: { url: string }[] }).servers.map((server) => server.url)).toEqual([`http://${new URL(app.service.url).host}`]);
  });
});

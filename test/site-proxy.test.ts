import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AddressPolicy } from '../src/net/address-policy.ts';
import { ExtractionProxy, type ExtractionProxyOptions, type ProxyPass } from '../src/sources/site/proxy.ts';

// The proxy every yt-dlp run goes through, used by real clients (curl, Node's http, a raw socket,
// yt-dlp itself) against real servers on loopback: loopback is what a policy that allows no
// private address must keep them from, so every target here is one the refusals are about.

type Target = { port: number; requests: http.IncomingMessage[]; bodies: Buffer[]; connections: number; server: net.Server };

const BODY = randomBytes(300_000);
let home: string;
let clip: Buffer;
let tls: https.ServerOptions;
const servers: net.Server[] = [];
const proxies: ExtractionProxy[] = [];

beforeAll(async () => {
  home = await mkdtemp(path.join(tmpdir(), 'site-proxy-'));
  const file = path.join(home, 'clip.mp4');
  const args = ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=160x120', '-f', 'lavfi', '-i', 'sine=duration=1', '-shortest', '-y', file];
  expect(await run('ffmpeg', args)).toMatchObject({ code: 0 });
  clip = await readFile(file);
  const [key, cert] = [path.join(home, 'key.pem'), path.join(home, 'cert.pem')];
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  expect(await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', ...subject, '-keyout', key, '-out', cert])).toMatchObject({
    code: 0,
  });
  tls = { key: await readFile(key), cert: await readFile(cert) };
});

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(home, { recursive: true, force: true });
});

/** An HTTP server that counts what reaches it: connections, requests, request bodies. */
async function target(host = '127.0.0.1', tls?: https.ServerOptions): Promise<Target> {
  const seen: Omit<Target, 'port' | 'server'> = { requests: [], bodies: [], connections: 0 };
  const server = (tls ? https.createServer.bind(null, tls) : http.createServer)((request, response) => {
    seen.requests.push(request);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.bodies.push(Buffer.concat(chunks));
      if (request.url === '/clip.mp4') return response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clip.length }).end(clip);
      response.writeHead(201, 'Made Up', { 'x-target': 'yes', 'set-cookie': ['a=1', 'b=2'], 'content-type': 'application/octet-stream' }).end(BODY);
    });
  });
  server.on('connection', () => seen.connections++);
  // The counts live on this one object: a copy of `connections` would stay 0.
  return Object.assign(seen, await listen(server, host));
}

/** A TCP server that sends back what it gets, for what only a tunnel carries. */
async function echo(): Promise<{ port: number; server: net.Server }> {
  return listen(
    net.createServer((socket) => socket.on('error', () => {}).pipe(socket)),
    '127.0.0.1',
  );
}

async function listen<T extends net.Server>(server: T, host: string): Promise<{ port: number; server: T }> {
  servers.push(server);
  server.listen(0, host);
  await once(server, 'listening');
  return { port: (server.address() as net.AddressInfo).port, server };
}

async function startProxy(policy: AddressPolicy, options?: ExtractionProxyOptions): Promise<ExtractionProxy> {
  const proxy = await ExtractionProxy.start(policy, options);
  proxies.push(proxy);
  return proxy;
}

function credential(pass: ProxyPass, secret?: string): string {
  const url = new URL(pass.url);
  return `Basic ${Buffer.from(`${url.username}:${secret ?? url.password}`).toString('base64')}`;
}

type Ran = { code: number | null; stdout: string; stderr: string };

/** A program as the service runs one: an argument list, no shell, only PATH and a HOME of its own. */
async function run(command: string, args: string[]): Promise<Ran> {
  const child = spawn(command, args, { env: { PATH: process.env.PATH, HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

/** A request in absolute form, exactly as written, from Node's client. */
async function viaNode(proxy: ExtractionProxy, requestTarget: string, headers: http.OutgoingHttpHeaders, body?: Buffer) {
  const request = http.request({ host: '127.0.0.1', port: proxy.port, method: body ? 'POST' : 'GET', path: requestTarget, headers, agent: false });
  request.end(body);
  const [response] = (await once(request, 'response')) as [http.IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) };
}

/** `CONNECT authority` on a raw socket: the proxy's status line, and the socket, a tunnel on 200. */
async function connect(proxy: ExtractionProxy, authority: string, authorization?: string): Promise<{ status: number; head: string; socket: net.Socket }> {
  const socket = net.connect(proxy.port, '127.0.0.1');
  socket.on('error', () => {});
  const auth = authorization ? `Proxy-Authorization: ${authorization}\r\n` : '';
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
  let received = '';
  while (!received.includes('\r\n\r\n')) {
    const chunk = socket.read() as Buffer | null;
    if (chunk) received += chunk.toString('latin1');
    else if (socket.readableEnded || socket.destroyed) break;
    else await Promise.race([once(socket, 'readable'), once(socket, 'close')]);
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), head: received, socket };
}

async function closed(socket: net.Socket): Promise<void> {
  if (!socket.destroyed) await once(socket, 'close');
}

describe('the extraction proxy', () => {
  it('when a plain GET goes through with a valid pass, then the target answer comes back whole and the proxy credential does not reach it', async () => {
    const site = await target();
    const pass = (await startProxy(new AddressPolicy(true))).open();
    const out = path.join(home, 'plain.out');
    const ran = await run('curl', ['-sS', '-D', '-', '-o', out, '-x', pass.url, `http://127.0.0.1:${site.port}/video?x=1`]);
    expect(ran).toMatchObject({ code: 0 });
    expect(ran.stdout).toMatch(/^HTTP\/1\.1 201 Made Up\r\n/);
    expect(ran.stdout).toMatch(/x-target: yes/i);
    expect(ran.stdout.match(/^set-cookie: [ab]=\d/gim)).toHaveLength(2);
    expect(
      createHash('sha256')
        .update(await readFile(out))
        .digest('hex'),
    ).toBe(createHash('sha256').update(BODY).digest('hex'));
    expect(site.requests).toHaveLength(1);
    expect(site.requests[0]!.url).toBe('/video?x=1');
    expect(site.requests[0]!.headers).not.toHaveProperty('proxy-authorization');
    expect(site.requests[0]!.headers.host).toBe(`127.0.0.1:${site.port}`);
  });

  it('when a request carries a body, then the target receives it intact', async () => {
    const site = await target();
    const proxy = await startProxy(new AddressPolicy(true));
    const pass = proxy.open();
    const answer = await viaNode(proxy, `http://127.0.0.1:${site.port}/upload`, { 'proxy-authorization': credential(pass) }, BODY);
    expect(answer.status).toBe(201);
    expect(site.bodies[0]!.equals(BODY)).toBe(true);
    expect(answer.body.equals(BODY)).toBe(true);
  });

  it('when curl tunnels through CONNECT, then its request reaches the target through the tunnel', async () => {
    const site = await target();
    const pass = (await startProxy(new AddressPolicy(true))).open();
    const ran = await run('curl', ['-sS', '-p', '-o', '/dev/null', '-w', '%{http_code}', '-x', pass.url, `http://127.0.0.1:${site.port}/tunnelled`]);
    expect(ran).toMatchObject({ code: 0, stdout: '201' });
    expect(site.requests.map((request) => request.url)).toEqual(['/tunnelled']);
  });

  it('when a CONNECT tunnel is open, then bytes go both ways untouched', async () => {
    const { port } = await echo();
    const proxy = await startProxy(new AddressPolicy(true));
    const tunnel = await connect(proxy, `127.0.0.1:${port}`, credential(proxy.open()));
    expect(tunnel.status).toBe(200);
    const bytes = randomBytes(100_000);
    const back: Buffer[] = [];
    tunnel.socket.on('data', (chunk: Buffer) => back.push(chunk));
    tunnel.socket.write(bytes);
    while (Buffer.concat(back).length < bytes.length) await once(tunnel.socket, 'data');
    expect(Buffer.concat(back).equals(bytes)).toBe(true);
    tunnel.socket.destroy();
  });

  it('when the credential is missing, wrong or revoked, then the proxy answers 407 and the target sees nothing', async () => {
    const site = await target();
    const proxy = await startProxy(new AddressPolicy(true));
    const pass = proxy.open();
    const url = `http://127.0.0.1:${site.port}/`;
    const missing = await viaNode(proxy, url, {});
    expect(missing.status).toBe(407);
    expect(missing.headers['proxy-authenticate']).toBe('Basic realm="vds"');
    expect((await viaNode(proxy, url, { 'proxy-authorization': credential(pass, 'not-the-secret') })).status).toBe(407);
    expect((await connect(proxy, `127.0.0.1:${site.port}`)).status).toBe(407);
    expect((await connect(proxy, `127.0.0.1:${site.port}`, credential(pass, 'x'))).status).toBe(407);
    // The same pass works until it is revoked: the 407s above are about the credential alone.
    expect((await viaNode(proxy, url, { 'proxy-authorization': credential(pass) })).status).toBe(201);
    pass.revoke();
    expect((await viaNode(proxy, url, { 'proxy-authorization': credential(pass) })).status).toBe(407);
    expect((await connect(proxy, `127.0.0.1:${site.port}`, credential(pass))).status).toBe(407);
    expect((await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-x', pass.url, url])).stdout).toBe('407');
    expect(site.requests).toHaveLength(1);
  });

  it('when a pass is revoked, then the tunnels opened with it end and other passes keep theirs', async () => {
    const { port } = await echo();
    const proxy = await startProxy(new AddressPolicy(true));
    const [revoked, kept] = [proxy.open(), proxy.open()];
    const doomed = await connect(proxy, `127.0.0.1:${port}`, credential(revoked));
    const alive = await connect(proxy, `127.0.0.1:${port}`, credential(kept));
    expect([doomed.status, alive.status]).toEqual([200, 200]);
    revoked.revoke();
    await closed(doomed.socket);
    alive.socket.write('still here');
    const [echoed] = (await once(alive.socket, 'data')) as [Buffer];
    expect(echoed.toString()).toBe('still here');
    alive.socket.destroy();
  }, 10_000);

  it.each([
    ['127.0.0.1', '127.0.0.1', (port: number) => `127.0.0.1:${port}`],
    ['localhost', 'localhost', (port: number) => `localhost:${port}`],
    ['[::1]', '[::1]', (port: number) => `[::1]:${port}`],
    ['2130706433', '127.0.0.1', (port: number) => `2130706433:${port}`],
  ])(
    'when the policy allows no private address and a request names %s, then it is answered 403, recorded as %s, and nothing reaches the target',
    async (_named, recorded, authority) => {
      const site = await target(recorded === '[::1]' ? '::1' : '127.0.0.1');
      const proxy = await startProxy(new AddressPolicy(false));
      const pass = proxy.open();
      const plain = await viaNode(proxy, `http://${authority(site.port)}/secret`, { 'proxy-authorization': credential(pass) });
      const tunnel = await connect(proxy, authority(site.port), credential(pass));
      const curled = await run('curl', ['-sS', '-g', '-o', '/dev/null', '-w', '%{http_code}', '-x', pass.url, `http://${authority(site.port)}/secret`]);
      expect([plain.status, tunnel.status, curled.stdout]).toEqual([403, 403, '403']);
      expect(pass.refused).toEqual([recorded]);
      expect(site.connections).toBe(0);
      // The same requests with a policy that allows private addresses do reach it: the 403s are the policy's.
      const allowing = (await startProxy(new AddressPolicy(true))).open();
      expect(
        (await run('curl', ['-sS', '-g', '-o', '/dev/null', '-w', '%{http_code}', '-x', allowing.url, `http://${authority(site.port)}/secret`])).stdout,
      ).toBe('201');
      expect(allowing.refused).toEqual([]);
    },
  );

  it('when a name resolves to an address the policy refuses, then the lookup refuses it before any connection', async () => {
    const site = await target();
    // Listed ranges turn off the refusal of `localhost` on its face, so the lookup's answer decides.
    const proxy = await startProxy(new AddressPolicy(['10.0.0.0/8']));
    const pass = proxy.open();
    expect((await viaNode(proxy, `http://localhost:${site.port}/`, { 'proxy-authorization': credential(pass) })).status).toBe(403);
    expect((await connect(proxy, `localhost:${site.port}`, credential(pass))).status).toBe(403);
    expect(pass.refused).toEqual(['localhost']);
    expect(site.connections).toBe(0);
  });

  it('when a lookup answers with an address the policy refuses anyway, then the address connected to is checked and nothing is sent', async () => {
    const site = await target();
    // A lookup that lets everything through, as a resolver's surprise would: only the second guard is left.
    class LeakyLookup extends AddressPolicy {
      override readonly lookup = (_host: string, options: object, callback: (error: null, address: string | LookupAddress[], family?: number) => void) =>
        (options as { all?: boolean }).all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
    }
    const proxy = await startProxy(new LeakyLookup(false));
    const pass = proxy.open();
    expect((await viaNode(proxy, `http://media.example.com:${site.port}/`, { 'proxy-authorization': credential(pass) })).status).toBe(403);
    expect((await connect(proxy, `media.example.com:${site.port}`, credential(pass))).status).toBe(403);
    expect(pass.refused).toEqual(['media.example.com']);
    expect(site.requests).toHaveLength(0);
  });

  it('when a request is in origin form, names another scheme or port 0, then it is answered 400', async () => {
    const site = await target();
    const proxy = await startProxy(new AddressPolicy(true));
    const auth = { 'proxy-authorization': credential(proxy.open()) };
    expect((await viaNode(proxy, '/video.mp4', auth)).status).toBe(400);
    expect((await viaNode(proxy, `https://127.0.0.1:${site.port}/`, auth)).status).toBe(400);
    expect((await viaNode(proxy, `ftp://127.0.0.1:${site.port}/`, auth)).status).toBe(400);
    expect((await viaNode(proxy, 'http://127.0.0.1:0/', auth)).status).toBe(400);
    expect((await connect(proxy, '127.0.0.1:0', auth['proxy-authorization'])).status).toBe(400);
    expect((await connect(proxy, '127.0.0.1', auth['proxy-authorization'])).status).toBe(400);
    expect(site.connections).toBe(0);
  });

  it('when a CONNECT names an IPv6 address without brackets, as Python does, then it is that address: tunnelled when allowed, refused when not', async () => {
    const site = await target('::1');
    const allowing = await startProxy(new AddressPolicy(true));
    expect((await connect(allowing, `::1:${site.port}`, credential(allowing.open()))).status).toBe(200);
    const refusing = await startProxy(new AddressPolicy(false));
    const pass = refusing.open();
    expect((await connect(refusing, `::1:${site.port}`, credential(pass))).status).toBe(403);
    expect(pass.refused).toEqual(['[::1]']);
    expect(site.connections).toBe(1);
  });

  it('when a run goes past its bound of bytes or of connections, then its connections end and the pass says which', async () => {
    const site = await target();
    const small = await startProxy(new AddressPolicy(true), { maxBytesPerPass: 10_000 });
    const heavy = small.open();
    const big = await viaNode(small, `http://127.0.0.1:${site.port}/big`, { 'proxy-authorization': credential(heavy) }).catch(() => null);
    // Cut after about 10 KB of the 300 KB body: an error, or a short body.
    expect(big === null || big.body.length < BODY.length).toBe(true);
    expect(heavy.exceeded()).toBe('bytes');

    const few = await startProxy(new AddressPolicy(true), { maxOpenedPerPass: 3 });
    const many = few.open();
    const statuses: (number | undefined)[] = [];
    for (let index = 0; index < 4; index++)
      statuses.push((await viaNode(few, `http://127.0.0.1:${site.port}/small`, { 'proxy-authorization': credential(many) })).status);
    expect(statuses).toEqual([201, 201, 201, 429]);
    expect(many.exceeded()).toBe('connections');
    expect(few.open().exceeded()).toBeNull();
  });

  it('when the target refuses the connection, then the proxy answers 502', async () => {
    const { port, server } = await listen(net.createServer(), '127.0.0.1');
    await new Promise((resolve) => server.close(resolve));
    const proxy = await startProxy(new AddressPolicy(true));
    const pass = proxy.open();
    expect((await viaNode(proxy, `http://127.0.0.1:${port}/`, { 'proxy-authorization': credential(pass) })).status).toBe(502);
    expect((await connect(proxy, `127.0.0.1:${port}`, credential(pass))).status).toBe(502);
    expect(pass.refused).toEqual([]);
  });

  it('when a run opens more connections than its bound, then the next is answered 429 until one ends', async () => {
    const { port } = await echo();
    const proxy = await startProxy(new AddressPolicy(true), { maxConnectionsPerPass: 2 });
    const auth = credential(proxy.open());
    const open = [await connect(proxy, `127.0.0.1:${port}`, auth), await connect(proxy, `127.0.0.1:${port}`, auth)];
    expect(open.map((tunnel) => tunnel.status)).toEqual([200, 200]);
    expect((await connect(proxy, `127.0.0.1:${port}`, auth)).status).toBe(429);
    open[0]!.socket.destroy();
    await closed(open[0]!.socket);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = await connect(proxy, `127.0.0.1:${port}`, auth);
    expect(again.status).toBe(200);
    for (const tunnel of [open[1]!, again]) tunnel.socket.destroy();
  });

  it('when a tunnel carries nothing for the idle time, then it is closed', async () => {
    const { port } = await echo();
    const proxy = await startProxy(new AddressPolicy(true), { idleTimeoutMs: 300 });
    const tunnel = await connect(proxy, `127.0.0.1:${port}`, credential(proxy.open()));
    expect(tunnel.status).toBe(200);
    const started = Date.now();
    await closed(tunnel.socket);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  }, 10_000);

  it('when the proxy closes, then its open tunnels end and it takes no more connections', async () => {
    const { port } = await echo();
    const proxy = await ExtractionProxy.start(new AddressPolicy(true));
    const tunnel = await connect(proxy, `127.0.0.1:${port}`, credential(proxy.open()));
    expect(tunnel.status).toBe(200);
    const proxyPort = proxy.port;
    await proxy.close();
    await closed(tunnel.socket);
    const refused = net.connect(proxyPort, '127.0.0.1');
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  }, 10_000);

  it('when yt-dlp extracts through the proxy, then it reads the clip through it, and with a refusing policy it reaches nothing', async () => {
    const site = await target();
    const url = `http://127.0.0.1:${site.port}/clip.mp4`;
    const ytDlp = (pass: ProxyPass) =>
      run('yt-dlp', ['--ignore-config', '--no-cache-dir', '--dump-single-json', '--no-playlist', '--proxy', pass.url, '--', url]);

    const allowed = (await startProxy(new AddressPolicy(true))).open();
    const extracted = await ytDlp(allowed);
    expect(extracted).toMatchObject({ code: 0 });
    expect((JSON.parse(extracted.stdout) as { url: string }).url).toBe(url);
    expect(site.requests.length).toBeGreaterThan(0);
    expect(site.requests.every((request) => request.url === '/clip.mp4' && !request.headers['proxy-authorization'])).toBe(true);

    const before = site.connections;
    const refusing = (await startProxy(new AddressPolicy(false))).open();
    const failed = await ytDlp(refusing);
    expect(failed.code).not.toBe(0);
    // yt-dlp prints `null` for what it could not extract, and the proxy's answer on stderr.
    expect(failed.stdout.trim()).toBe('null');
    expect(failed.stderr).toMatch(/HTTP Error 403/);
    expect(site.connections).toBe(before);
    expect(refusing.refused).toEqual(['127.0.0.1']);
  }, 60_000);

  it('when yt-dlp extracts an https URL, then it goes through a CONNECT tunnel the policy judged', async () => {
    const site = await target('127.0.0.1', tls);
    const url = `https://127.0.0.1:${site.port}/clip.mp4`;
    const ytDlp = (pass: ProxyPass) =>
      run('yt-dlp', ['--ignore-config', '--no-cache-dir', '--dump-single-json', '--no-playlist', '--no-check-certificate', '--proxy', pass.url, '--', url]);

    const extracted = await ytDlp((await startProxy(new AddressPolicy(true))).open());
    expect(extracted).toMatchObject({ code: 0 });
    expect((JSON.parse(extracted.stdout) as { url: string }).url).toBe(url);
    expect(site.requests.length).toBeGreaterThan(0);

    const before = site.connections;
    const refusing = (await startProxy(new AddressPolicy(false))).open();
    const failed = await ytDlp(refusing);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/403/);
    expect(site.connections).toBe(before);
    expect(refusing.refused).toEqual(['127.0.0.1']);
  }, 60_000);
});

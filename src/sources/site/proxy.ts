import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type net from 'node:net';
import type { AddressPolicy } from '../../net/address-policy.ts';
import { DialFailure, Link, absoluteTarget, connectTarget, dial, endToEnd } from './proxy-connections.ts';

// The forward proxy every yt-dlp run goes through (`--proxy`), so that each connection yt-dlp
// opens, plain HTTP or a CONNECT tunnel, is held to the service's address policy: yt-dlp itself
// would connect anywhere a page points it. Only the service's own runs may use it: each run gets
// a credential of its own, good until the run ends.

export type ExtractionProxyOptions = {
  connectTimeoutMs?: number;
  /** How long a tunnel or a forwarded request may carry nothing either way. */
  idleTimeoutMs?: number;
  /** Connections one run may have open at once; more are answered 429. */
  maxConnectionsPerPass?: number;
  /** Connections one run may open in all: a page that lists thousands of URLs gets no more requests out of it. */
  maxOpenedPerPass?: number;
  /** Bytes the targets may send one run in all: an extraction reads pages and manifests, never media. */
  maxBytesPerPass?: number;
};

/** One run's way through the proxy. `url` holds its secret: give it to yt-dlp, log it nowhere. */
export type ProxyPass = {
  readonly url: string;
  /** Hosts the policy refused to this run (as URL hosts: `127.0.0.1`, `[::1]`, `localhost`), each once. */
  readonly refused: readonly string[];
  /** Which of the run's bounds it went past (`bytes`, `connections`), if any: its connections were then ended. */
  readonly exceeded: () => 'bytes' | 'connections' | null;
  /** Ends the credential and every connection opened with it. */
  revoke(): void;
};

type Pass = { digest: Buffer; refused: string[]; links: Set<Link>; opened: number; bytes: number; exceeded: 'bytes' | 'connections' | null };
type Opened = { target: URL; link: Link; socket: net.Socket };
type Reply = (status: number, headers?: Record<string, string>) => void;

const MAX_REFUSED = 50;

export class ExtractionProxy {
  private readonly passes = new Map<string, Pass>();
  private readonly clients = new Set<net.Socket>();

  private constructor(
    private readonly server: http.Server,
    private readonly policy: AddressPolicy,
    private readonly settings: Required<ExtractionProxyOptions>,
  ) {}

  static async start(policy: AddressPolicy, options: ExtractionProxyOptions = {}): Promise<ExtractionProxy> {
    const server = http.createServer();
    const proxy = new ExtractionProxy(server, policy, {
      connectTimeoutMs: 10_000,
      idleTimeoutMs: 60_000,
      maxConnectionsPerPass: 32,
      maxOpenedPerPass: 256,
      maxBytesPerPass: 64 * 1024 * 1024,
      ...options,
    });
    server.on('connection', (socket: net.Socket) => {
      proxy.clients.add(socket);
      // Node's server drops its own listener from a CONNECT socket; this one outlives it.
      socket.on('error', () => socket.destroy());
      socket.once('close', () => proxy.clients.delete(socket));
    });
    // Neither handler is expected to throw; if one does, its client goes, and the process stays.
    server.on('request', (request: IncomingMessage, response: ServerResponse) => void proxy.forward(request, response).catch(() => request.socket.destroy()));
    server.on(
      'connect',
      (request: IncomingMessage, socket: net.Socket, head: Buffer) => void proxy.tunnel(request, socket, head).catch(() => socket.destroy()),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  open(): ProxyPass {
    const user = randomBytes(8).toString('hex');
    const secret = randomBytes(24).toString('hex');
    const pass: Pass = { digest: digest(secret), refused: [], links: new Set(), opened: 0, bytes: 0, exceeded: null };
    this.passes.set(user, pass);
    const revoke = (): void => {
      this.passes.delete(user);
      for (const link of pass.links) link.destroy();
    };
    return { url: `http://${user}:${secret}@127.0.0.1:${this.port}`, refused: pass.refused, exceeded: () => pass.exceeded, revoke };
  }

  async close(): Promise<void> {
    for (const pass of this.passes.values()) for (const link of pass.links) link.destroy();
    this.passes.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.clients) socket.destroy();
    await closed;
  }

  /** A plain HTTP request in absolute form, sent on to its target over a connection of its own. */
  private async forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const reply: Reply = (status, headers = {}) => {
      if (!response.headersSent) response.writeHead(status, { ...headers, connection: 'close', 'content-length': '0' }).end();
    };
    const opened = await this.connectFor(request, absoluteTarget(request.url ?? ''), reply);
    if (!opened) return;
    const { target, link, socket } = opened;
    const headers = ['Host', target.host, ...endToEnd(request.rawHeaders, ['host'])];
    const outgoing = http.request({ method: request.method, path: target.pathname + target.search, headers, createConnection: () => socket });
    outgoing.on('error', () => link.destroy());
    response.on('error', () => link.destroy());
    outgoing.on('response', (answer: IncomingMessage) => {
      answer.on('error', () => link.destroy());
      try {
        response.writeHead(answer.statusCode ?? 502, answer.statusMessage, [...endToEnd(answer.rawHeaders), 'Connection', 'close']);
      } catch {
        return link.destroy(); // headers Node will not send on
      }
      answer.pipe(response);
    });
    request.pipe(outgoing);
  }

  /** `CONNECT host:port`: once the target is open, bytes go both ways untouched (TLS, for https). */
  private async tunnel(request: IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    const reply: Reply = (status, headers = {}) => {
      const lines = Object.entries({ ...headers, Connection: 'close', 'Content-Length': '0' }).map(([name, value]) => `${name}: ${value}\r\n`);
      if (client.writable) client.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${lines.join('')}\r\n`);
    };
    const opened = await this.connectFor(request, connectTarget(request.url ?? ''), reply);
    if (!opened) return;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) opened.socket.write(head);
    opened.socket.pipe(client);
    client.pipe(opened.socket);
  }

  /** What both kinds share: the credential, the target, the run's bound, and the connection itself. */
  private async connectFor(request: IncomingMessage, target: URL | null, reply: Reply): Promise<Opened | undefined> {
    const pass = this.passOf(request.headers['proxy-authorization']);
    if (!pass) return void reply(407, { 'Proxy-Authenticate': 'Basic realm="vds"' });
    if (!target) return void reply(400);
    if (pass.links.size >= this.settings.maxConnectionsPerPass) return void reply(429);
    if (pass.opened >= this.settings.maxOpenedPerPass) {
      pass.exceeded ??= 'connections';
      return void reply(429);
    }
    pass.opened += 1;
    if (request.socket.destroyed) return; // its 'close' is past: nothing would end the link
    const link: Link = new Link(request.socket, this.settings.idleTimeoutMs, () => pass.links.delete(link));
    pass.links.add(link);
    try {
      const socket = await dial(this.policy, target, this.settings.connectTimeoutMs, link.signal);
      link.bind(socket);
      socket.on('data', (chunk: Buffer) => {
        pass.bytes += chunk.length;
        if (pass.bytes <= this.settings.maxBytesPerPass) return;
        pass.exceeded ??= 'bytes';
        for (const each of pass.links) each.destroy();
      });
      return { target, link, socket };
    } catch (error) {
      const status = error instanceof DialFailure ? error.status : 502;
      if (status === 403 && !pass.refused.includes(target.hostname) && pass.refused.length < MAX_REFUSED) pass.refused.push(target.hostname);
      reply(status);
    }
  }

  /** The pass a `Proxy-Authorization: Basic` header names, if its secret is right and it is not revoked. */
  private passOf(header: string | undefined): Pass | undefined {
    const encoded = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header ?? '')?.[1];
    if (!encoded) return undefined;
    const credential = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = credential.indexOf(':');
    // The user part is a random name, not a secret: the secret is compared in constant time, as digests of equal length.
    const pass = colon > 0 ? this.passes.get(credential.slice(0, colon)) : undefined;
    return pass && timingSafeEqual(pass.digest, digest(credential.slice(colon + 1))) ? pass : undefined;
  }
}

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

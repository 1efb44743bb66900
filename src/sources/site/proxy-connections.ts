import net from 'node:net';
import { BLOCKED_ADDRESS, type AddressPolicy } from '../../net/address-policy.ts';

// The pieces of the extraction proxy that deal with one proxied connection: where it goes, opening
// it under the address policy, and tying its sockets together so that they end together.

/** Why the proxy opened nothing: refused by the policy (403), unreachable (502), too slow (504). */
export class DialFailure extends Error {
  constructor(readonly status: 403 | 502 | 504) {
    super(`the proxy answers ${status}`);
  }
}

/**
 * The target of `CONNECT host:port`. The host goes through the URL parser, as every source URL
 * does, so that spellings like `2130706433` or `0x7f.1` are read as the address they mean.
 */
export function connectTarget(authority: string): URL | null {
  const match = /^([^/?#@\\\s]+):(\d{1,5})$/.exec(authority);
  // Python names an IPv6 target without brackets (`CONNECT ::1:443`): a host with colons is one.
  const host = match && match[1]!.includes(':') && !match[1]!.startsWith('[') ? `[${match[1]}]` : match?.[1];
  if (!match || !URL.canParse(`http://${host}/`)) return null;
  const url = new URL(`http://${host}/`);
  url.port = match[2]!;
  return portOf(url) ? url : null;
}

/** The target of a request in absolute form (`GET http://host/path`); only plain HTTP is proxied so. */
export function absoluteTarget(requestTarget: string): URL | null {
  if (!/^http:\/\//i.test(requestTarget) || !URL.canParse(requestTarget)) return null;
  const url = new URL(requestTarget);
  return portOf(url) ? url : null;
}

/** 1-65535, or 0 for a port nothing may be connected to. */
export function portOf(url: URL): number {
  const port = url.port === '' ? 80 : Number(url.port);
  return port >= 1 && port <= 65535 ? port : 0;
}

/**
 * A connection to `target`, refused before it is opened when the policy does not allow where it
 * goes. Node calls no `lookup` for an address literal, so literals (and names local on their face)
 * are judged first; names are judged by the policy's lookup; the address actually connected to
 * is judged again, in case anything resolved it otherwise.
 */
export function dial(policy: AddressPolicy, target: URL, timeoutMs: number, signal: AbortSignal): Promise<net.Socket> {
  if (policy.refusesOnItsFace(target)) return Promise.reject(new DialFailure(403));
  return new Promise((resolve, reject) => {
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    const socket = net.connect({ host, port: portOf(target), lookup: policy.lookup, signal });
    const fail = (status: DialFailure['status']): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(new DialFailure(status));
    };
    const timer = setTimeout(() => fail(504), timeoutMs);
    // Stays for the socket's life: whoever takes the socket adds its own, this one only destroys it.
    socket.on('error', (error: NodeJS.ErrnoException) => fail(statusOf(error)));
    socket.once('close', () => fail(502));
    socket.once('connect', () => {
      clearTimeout(timer);
      if (!policy.allows(socket.remoteAddress ?? '')) return fail(403);
      resolve(socket);
    });
  });
}

function statusOf(error: NodeJS.ErrnoException): DialFailure['status'] {
  if (error.code === BLOCKED_ADDRESS) return 403;
  return error.code === 'ETIMEDOUT' ? 504 : 502;
}

/**
 * The sockets of one proxied connection: the client's, and the target's once open. An error or
 * idleness on either, the client going, or `destroy()` (a revoked pass, the proxy closing) ends
 * them all; a dial still under way is aborted. The target closing ends nothing by itself: what it
 * sent may still be on its way to the client, and the client closes when it has it.
 */
export class Link {
  private readonly aborter = new AbortController();
  private readonly sockets = new Set<net.Socket>();

  constructor(
    client: net.Socket,
    private readonly idleTimeoutMs: number,
    private readonly onEnd: () => void,
  ) {
    this.bind(client);
    client.once('close', () => this.destroy());
  }

  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  bind(socket: net.Socket): void {
    if (this.aborter.signal.aborted) return void socket.destroy();
    this.sockets.add(socket);
    socket.on('error', () => this.destroy());
    socket.setTimeout(this.idleTimeoutMs, () => this.destroy());
  }

  destroy(): void {
    if (this.aborter.signal.aborted) return;
    this.aborter.abort();
    for (const socket of this.sockets) socket.destroy();
    this.onEnd();
  }
}

// Headers about one connection, not the message (RFC 9110 7.6.1), and the proxy's own; `expect` too,
// as Node's server has already answered it.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

/** Raw headers (name, value, name, value...) without hop-by-hop ones, nor any the Connection header names, nor those in `also`. */
export function endToEnd(raw: string[], also: string[] = []): string[] {
  const dropped = new Set([...HOP_BY_HOP, ...also]);
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') continue;
    for (const token of raw[i + 1]!.split(',')) dropped.add(token.trim().toLowerCase());
  }
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!dropped.has(raw[i]!.toLowerCase())) kept.push(raw[i]!, raw[i + 1]!);
  return kept;
}

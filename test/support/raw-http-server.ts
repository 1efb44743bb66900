import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

// HTTP written by hand on node:net, for what no real server does on purpose but real networks and
// servers still do: a complete body followed at once by a TCP reset, a file that changes between
// two requests, a Range answered with the whole file. Each response is scripted by the test; the
// server parses requests (one after another on a connection) and remembers every one.

export type RawRequest = {
  method: string;
  /** The request target as sent, with its query string. */
  target: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** Filled in by the handler: what became of the response (bytes the kernel never sent, say). */
  notes: Record<string, unknown>;
};

/** Answers one request; resolves to `true` to read the next request from the same connection. */
export type RawHandler = (request: RawRequest, socket: net.Socket) => Promise<boolean>;

export type RawServer = {
  url: string;
  readonly requests: readonly RawRequest[];
  requestsFor(target: string): RawRequest[];
  close(): Promise<void>;
};

const HEAD_END = Buffer.from('\r\n\r\n');

function parseHead(head: string): Omit<RawRequest, 'notes'> {
  const [requestLine = '', ...lines] = head.split('\r\n');
  const [method = '', target = ''] = requestLine.split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { method, target, headers };
}

/** Starts a server on a free port of 127.0.0.1 that answers every request with `handler`. */
export async function startRawServer(handler: RawHandler): Promise<RawServer> {
  const requests: RawRequest[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    let busy = false;
    const next = async () => {
      if (busy) return;
      const end = buffered.indexOf(HEAD_END);
      if (end < 0) return;
      busy = true;
      const request: RawRequest = { ...parseHead(buffered.subarray(0, end).toString('latin1')), notes: {} };
      buffered = buffered.subarray(end + HEAD_END.length);
      requests.push(request);
      const keepGoing = await handler(request, socket).catch((error: unknown) => {
        request.notes.handlerError = String(error);
        socket.destroy();
        return false;
      });
      busy = false;
      if (keepGoing && !socket.destroyed) await next();
    };
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      void next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    requestsFor: (target) => requests.filter((request) => request.target === target),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes `data`; resolves once the kernel has taken all of it (the write callback), false if the socket went first. */
export function written(socket: net.Socket, data: Buffer | string): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve(false);
    socket.write(data, (error) => resolve(!error));
  });
}

/**
 * The bytes of `socket`'s stream that its kernel has not sent yet (`ss`'s notsent): what a reset
 * now would throw away. Bytes sent and not yet acknowledged are not counted: on loopback they are
 * in the peer's kernel already, and it hands them over before the reset that follows them.
 */
export function unsentBytes(socket: net.Socket): number {
  let out: string;
  try {
    out = execFileSync('ss', ['-tinH', 'state', 'established', 'src', `127.0.0.1:${socket.localPort}`, 'dst', `127.0.0.1:${socket.remotePort}`], {
      encoding: 'utf8',
    });
  } catch (error) {
    throw new Error(`ss (iproute2) is needed to tell how much a reset throws away: ${String(error)}`, { cause: error });
  }
  return Number(/\bnotsent:(\d+)/.exec(out)?.[1] ?? 0);
}

/** Bytes written to `socket` that its peer's kernel has not acknowledged yet (tx_queue of /proc/net/tcp). */
function unacknowledgedBytes(socket: net.Socket): number | null {
  const hex = (port: number | undefined) => `:${(port ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, , queues] = line.trim().split(/\s+/);
    if (local?.endsWith(hex(socket.localPort)) && remote?.endsWith(hex(socket.remotePort))) return parseInt(queues!.split(':')[0]!, 16);
  }
  return null;
}

/** Resolves once the peer's kernel has acknowledged every byte written to `socket` (or after `timeoutMs`); whether it did. */
export async function acknowledged(socket: net.Socket, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = unacknowledgedBytes(socket);
    if (left === 0 || left === null) return left === 0;
    if (Date.now() >= deadline || socket.destroyed) return false;
    await sleep(2);
  }
}

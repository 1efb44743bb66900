import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './waiting.ts';

// A stand-in for a client's webhook endpoint: a real HTTP server on 127.0.0.1 that records every
// delivery as it arrived (headers and the exact body bytes, which signatures are over), answers as
// each path is scripted to, and can go down and come back on the same port, as a client's server
// does when it restarts.

export type ReceivedWebhook = {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as sent, as text. */
  body: string;
  /** What the receiver answered; 0 when it held the request without answering. */
  status: number;
  receivedAt: number;
};

export type HookScript = {
  /** The first `hangFirst` deliveries to this path get no answer at all, until the sender gives up. Default 0. */
  hangFirst?: number;
  /** The first `failFirst` deliveries to this path are answered with `failWith`; later ones 204. Default 0. */
  failFirst?: number;
  /** Default 500. */
  failWith?: number;
  /** Every delivery is answered with this status (overrides `failFirst`). */
  always?: number;
  /** Sent as Location with every answer, to make a 3xx a redirect. */
  location?: string;
};

export type WebhookReceiver = {
  /** http://127.0.0.1:<port>, the same across stop and start. */
  readonly origin: string;
  readonly port: number;
  /** Answers deliveries to `path` as `script` says; returns its URL. */
  hook(path: string, script?: HookScript): string;
  readonly deliveries: readonly ReceivedWebhook[];
  /** TCP connections accepted so far, whether or not a request came over them. */
  readonly connections: number;
  deliveriesTo(path: string): ReceivedWebhook[];
  /** Resolves once `path` has received `count` deliveries; returns them. */
  waitForDeliveries(path: string, count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Closes the listener and every connection: deliveries are refused until `start`. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
};

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const scripts = new Map<string, HookScript>();
  const deliveries: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let port = 0;
  let connections = 0;

  function answerFor(path: string): number {
    const script = scripts.get(path) ?? {};
    if (script.always !== undefined) return script.always;
    const earlier = deliveries.filter((delivery) => delivery.path === path).length;
    const hang = script.hangFirst ?? 0;
    if (earlier < hang) return 0;
    return earlier - hang < (script.failFirst ?? 0) ? (script.failWith ?? 500) : 204;
  }

  async function listen(): Promise<void> {
    const listening = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const path = new URL(req.url ?? '/', 'http://receiver.invalid').pathname;
        const status = answerFor(path);
        deliveries.push({ path, method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status, receivedAt: Date.now() });
        if (status === 0) return;
        const location = scripts.get(path)?.location;
        res.writeHead(status, { 'content-type': 'text/plain', ...(location ? { location } : {}) }).end(status < 300 ? '' : 'scripted failure');
      });
    });
    listening.on('connection', () => connections++);
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(port, '127.0.0.1', () => resolve());
    });
    port = (listening.address() as AddressInfo).port;
    server = listening;
  }

  await listen();
  return {
    get origin() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    hook(path, script = {}) {
      scripts.set(path, script);
      return `http://127.0.0.1:${port}${path}`;
    },
    deliveries,
    get connections() {
      return connections;
    },
    deliveriesTo: (path) => deliveries.filter((delivery) => delivery.path === path),
    waitForDeliveries(path, count, timeoutMs = 20_000) {
      return waitFor(
        `${count} webhook deliveries to ${path}`,
        () => {
          const received = deliveries.filter((delivery) => delivery.path === path);
          return received.length >= count && received;
        },
        timeoutMs,
      );
    },
    async stop() {
      const closing = server;
      server = undefined;
      if (!closing) return;
      await new Promise<void>((resolve) => {
        closing.close(() => resolve());
        closing.closeAllConnections();
      });
    },
    async start() {
      if (!server) await listen();
    },
  };
}

import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { DownloadError } from '../core/errors.ts';
import { slowHead } from './response-head.ts';

// One GET over Node's own HTTP client. Its back-pressure stops reading the socket (the kernel
// holds what the source sends meanwhile), so a body may wait unread for as long as the service
// needs (a database write, a slow disk) and a close or a reset that arrives meanwhile is read in
// order after the bytes before it: a complete body is never lost to the way its connection ended.
// undici 7's parser, by contrast, pauses on back-pressure and asserts on a close while paused,
// from a socket listener, which ended the process (fixed in undici 8, which needs Node 22).

export type ExchangeOptions = {
  /** GET unless told; a body goes with a POST. */
  method?: 'GET' | 'POST';
  body?: string;
  headers: Record<string, string>;
  signal?: AbortSignal;
  lookup?: LookupFunction;
  connectTimeoutMs: number;
  /** How long the source may send nothing, before its headers and while its body is read. */
  idleTimeoutMs: number;
};

/** A connection that a server closed while it sat idle in the pool fails the next request sent on it; that request goes again on a new one. */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);
const MAX_STALE_RETRIES = 4;

export class Exchanges {
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };

  async request(url: URL, options: ExchangeOptions): Promise<IncomingMessage> {
    for (let stale = 0; ; stale++) {
      const { request, response } = this.send(url, options);
      try {
        return await response;
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        if (!request.reusedSocket || !STALE_CONNECTION_CODES.has(code) || stale >= MAX_STALE_RETRIES || options.signal?.aborted) throw error;
      }
    }
  }

  close(): void {
    for (const agent of Object.values(this.agents)) agent.destroy();
  }

  private send(url: URL, options: ExchangeOptions): { request: ClientRequest; response: Promise<IncomingMessage> } {
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: options.method ?? 'GET',
      agent: this.agents[url.protocol as 'http:' | 'https:'],
      headers: options.headers,
      signal: options.signal,
      lookup: options.lookup,
    });
    request.end(options.body);
    const response = new Promise<IncomingMessage>((resolve, reject) => {
      // A socket may report an error after its response has ended (a reset after the last byte),
      // when nobody waits for it any more: it is heard here, and never thrown as an 'error' event.
      // Before the end, a body whose length is its connection's close was cut by that error, not
      // ended, though Node's client would finish it as whole.
      request.on('error', (error) => {
        const response = responseOf(request);
        if (response && !response.complete) response.destroy(error);
        reject(error);
      });
      request.on('socket', (socket) => watch(request, socket, options));
      request.on('response', resolve);
      // No request here asks for another protocol: a peer that switches anyway is refused, its socket closed.
      request.on('upgrade', (response: IncomingMessage, socket: Socket) => {
        socket.destroy();
        reject(new DownloadError('source_http_error', `The source answered ${response.statusCode}, switching to another protocol that was not asked for.`));
      });
    });
    return { request, response };
  }
}

/**
 * Holds the connection to its connect timeout, then to the idle timeout: the source must send
 * its whole head within one idle period, and something (headers, body bytes) within every one, except while its body waits on the
 * service's reader, which is not the source's delay. A pooled socket keeps none of this.
 */
function watch(request: ClientRequest, socket: Socket, options: ExchangeOptions): void {
  // The period in which the reader catches up is not held against the source either.
  let readerWasBehind = false;
  const idle = () => {
    const response = responseOf(request);
    const readerBehind = response !== undefined && !response.complete && waitsOnReader(response);
    if (readerBehind || readerWasBehind) {
      readerWasBehind = readerBehind;
      socket.setTimeout(options.idleTimeoutMs);
      return;
    }
    const error = timeout('The source stopped responding.');
    // The body's reader learns why it ended, rather than that the connection was cut.
    response?.destroy(error);
    request.destroy(error);
  };
  // Until the head has come: the connect timeout, then one idle period for the whole head (the
  // idle timeout alone would let a source drip its head for ever, a header field at a time).
  let deadline: NodeJS.Timeout | undefined;
  const watchIdle = () => {
    socket.setTimeout(options.idleTimeoutMs).on('timeout', idle);
    deadline = setTimeout(() => request.destroy(slowHead(options.idleTimeoutMs)), options.idleTimeoutMs);
  };
  // Let go before the pool hands the socket to another request (the agent resets its timeout).
  const unwatch = () => {
    clearTimeout(deadline);
    socket.off('timeout', idle);
  };
  request
    .once('response', (response: IncomingMessage) => {
      clearTimeout(deadline);
      response.once('end', unwatch).once('close', unwatch);
    })
    .once('close', unwatch);
  if (!socket.connecting) return watchIdle();
  deadline = setTimeout(() => request.destroy(timeout('The connection to the source timed out.')), options.connectTimeoutMs);
  socket.once('connect', () => {
    clearTimeout(deadline);
    watchIdle();
  });
  socket.once('close', () => clearTimeout(deadline));
}

/** The response once its headers have come (Node's client holds null until then). */
function responseOf(request: ClientRequest): IncomingMessage | undefined {
  return (request as { res?: IncomingMessage | null }).res ?? undefined;
}

/** Node's client stops reading the socket once a body holds this much that nobody has read. */
function waitsOnReader(response: IncomingMessage): boolean {
  return response.readableLength >= response.readableHighWaterMark;
}

function timeout(message: string): DownloadError {
  return new DownloadError('source_timeout', message, true);
}

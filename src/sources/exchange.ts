import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { DownloadError } from '../core/errors.ts';

// One GET over Node's own HTTP client. Its back-pressure stops reading the socket (the kernel
// holds what the source sends meanwhile), so a body may wait unread for as long as the service
// needs (a database write, a slow disk) and a close or a reset that arrives meanwhile is read in
// order after the bytes before it: a complete body is never lost to the way its connection ended.
// undici 7's parser, by contrast, pauses on back-pressure and asserts on a close while paused,
// from a socket listener, which ended the process (fixed in undici 8, which needs Node 22).

export type ExchangeOptions = {
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

  async get(url: URL, options: ExchangeOptions): Promise<IncomingMessage> {
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
      method: 'GET',
      agent: this.agents[url.protocol as 'http:' | 'https:'],
      headers: options.headers,
      signal: options.signal,
      lookup: options.lookup,
    });
    request.end();
    const response = new Promise<IncomingMessage>((resolve, reject) => {
      // A socket may report an error after its response has ended (a reset after the last byte),
      // when nobody waits for it any more: it is heard here, and never thrown as an 'error' event.
      request.on('error', reject);
      request.on('socket', (socket) => {
        if (!socket.connecting) return;
        const timer = setTimeout(() => request.destroy(timeout('The connection to the source timed out.')), options.connectTimeoutMs);
        socket.once('connect', () => clearTimeout(timer)).once('close', () => clearTimeout(timer));
      });
      request.setTimeout(options.idleTimeoutMs, () => {
        const response = (request as { res?: IncomingMessage }).res;
        // A body that waits on its reader is not the source's delay: the wait starts again.
        if (response && !response.complete && waitsOnReader(response)) return void request.setTimeout(options.idleTimeoutMs);
        // The body's reader learns why it ended, rather than that the connection was cut.
        response?.destroy(timeout('The source stopped responding.'));
        request.destroy(timeout('The source stopped responding.'));
      });
      request.on('response', resolve);
    });
    return { request, response };
  }
}

function waitsOnReader(response: IncomingMessage): boolean {
  return response.readableLength >= response.readableHighWaterMark || response.isPaused();
}

function timeout(message: string): DownloadError {
  return new DownloadError('source_timeout', message, true);
}

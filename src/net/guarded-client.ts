import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { DownloadError } from '../core/errors.ts';
import { AddressPolicy, BLOCKED_ADDRESS, type PrivateAllowance } from './address-policy.ts';
import { bulkGet, type BulkResponse } from './bulk-get.ts';
import { decodedBody, DOCUMENT_ENCODINGS } from './decoded-body.ts';
import { heldBody } from './read-ahead-body.ts';
import { SpeedFloor, type MinSpeed } from './speed-floor.ts';
import { Exchanges } from './timed-request.ts';

// One HTTP client for every source kind. Redirects are followed here, hop by hop, so that every
// hop is checked like the first; connections go only to addresses the policy allows; transport
// failures become the contract's error codes.

const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export type SourcePolicy = {
  allowPrivateAddresses: PrivateAllowance;
  connectTimeoutMs: number;
  /** How long a source may send nothing (no headers, or no body bytes) before it counts as stalled. */
  idleTimeoutMs: number;
  /** The slowest a source may send, averaged over each idle timeout; 0 for no floor. */
  minBytesPerSecond: number;
};

export type SourceResponse = {
  url: string;
  status: number;
  headers: Record<string, string | undefined>;
  body: Readable;
  /** This response's bytes held to the policy's speed floor, by whoever reads them whole. */
  floor: SpeedFloor;
};

/** The declared body length, when there is a usable one. */
export function contentLength(response: SourceResponse): number | null {
  const value = Number(response.headers['content-length'] ?? NaN);
  return Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** Throws when a body ended before the length it was declared to have: the connection broke, a retry may get it all. */
export function requireWholeBody(response: SourceResponse, received: number, expected: number | null): void {
  if (expected !== null && received !== expected) {
    throw new DownloadError('source_unreachable', `The source closed the connection after ${received} of ${expected} bytes of ${response.url}.`, true);
  }
}

/** Lets go of a body that is not wanted (an error page, a response that will be asked for again). */
export function discard(response: SourceResponse | BulkResponse): void {
  if ('discard' in response) return response.discard();
  // Destroying it is the point; the abort error it then emits is not news to anyone.
  response.body.on('error', () => {});
  response.body.destroy();
}

/**
 * The response, when its status is one the caller can read from (any 2xx unless it names them);
 * any other answer lets go of its body and is thrown as the contract's error.
 */
export function requireStatus(response: SourceResponse, accepted?: readonly number[]): SourceResponse {
  const readable = accepted ? accepted.includes(response.status) : response.status >= 200 && response.status < 300;
  if (readable) return response;
  discard(response);
  throw httpStatusError(response.status);
}

type GetOptions = {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** A playlist, a manifest or a page is asked for compressed; media bytes never are. */
  document?: boolean;
};

export class SourceHttp {
  readonly addresses: AddressPolicy;
  /** What every download and every response read through this client is held to. */
  readonly minSpeed: MinSpeed;

  constructor(
    private readonly policy: SourcePolicy,
    private readonly exchanges = new Exchanges(),
    /** Sent with every request, under each request's own: what a site asks its media to be fetched with. */
    private readonly carried: { headers: Record<string, string>; origin: string | null } = { headers: {}, origin: null },
  ) {
    this.addresses = new AddressPolicy(policy.allowPrivateAddresses);
    this.minSpeed = { bytesPerSecond: policy.minBytesPerSecond, windowMs: policy.idleTimeoutMs };
  }

  /**
   * This client (its connections too), sending `headers` with every request: a site's User-Agent
   * and Referer for its media. A Cookie goes only to the origin of `forUrl`, never to wherever a
   * redirect or a playlist leads.
   */
  withHeaders(headers: Record<string, string>, forUrl: string): SourceHttp {
    return new SourceHttp(this.policy, this.exchanges, { headers, origin: URL.canParse(forUrl) ? new URL(forUrl).origin : null });
  }

  /** How every request to `target` goes: its headers over the carried ones, the address policy, the timeouts. */
  private sent(target: URL, headers: Record<string, string> | undefined, encodings: string) {
    return {
      headers: { 'user-agent': 'video-download-service', 'accept-encoding': encodings, ...this.carriedTo(target), ...headers },
      lookup: this.addresses.allowsEverything ? undefined : this.addresses.lookup,
      connectTimeoutMs: this.policy.connectTimeoutMs,
      idleTimeoutMs: this.policy.idleTimeoutMs,
    };
  }

  private carriedTo(target: URL): Record<string, string> {
    if (target.origin === this.carried.origin) return this.carried.headers;
    return Object.fromEntries(Object.entries(this.carried.headers).filter(([name]) => name.toLowerCase() !== 'cookie'));
  }

  async get(url: string, options: GetOptions = {}): Promise<SourceResponse> {
    let current = url;
    for (let hop = 0; ; hop++) {
      // What is private on its face (an address literal needs no lookup, so the lookup's check
      // would never see it) is refused before any connection, on every hop.
      // A manifest or a redirect may name anything, a URL of any scheme or none; only the web is fetched from.
      const target = URL.canParse(current) ? new URL(current) : null;
      if (!target) throw new DownloadError('unsupported_source', `The source refers to ${JSON.stringify(current.slice(0, 200))}, which is not a URL.`);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        throw new DownloadError('unsupported_source', `The source refers to a ${target.protocol} URL, which is not fetched.`);
      }
      if (this.addresses.refusesOnItsFace(target)) throw blockedAddress(target.hostname);
      let response: IncomingMessage;
      try {
        const encodings = options.document ? DOCUMENT_ENCODINGS : 'identity';
        response = await this.exchanges.request(target, { ...this.sent(target, options.headers, encodings), signal: options.signal });
      } catch (error) {
        throw transportError(error, options.signal);
      }
      // Whoever reads the body hears of its failure; until someone does, it must not go unheard.
      response.on('error', () => {});
      const location = response.headers.location;
      const status = response.statusCode ?? 0;
      if (!REDIRECTS.has(status) || typeof location !== 'string') return opened(current, response, this.minSpeed);
      // A redirect's body is not wanted, and may be endless: the connection goes with it.
      response.destroy();
      if (hop >= MAX_REDIRECTS) throw new DownloadError('source_http_error', `The source redirected more than ${MAX_REDIRECTS} times.`);
      if (!URL.canParse(location, current)) {
        throw new DownloadError('source_http_error', `The source redirected to ${JSON.stringify(location.slice(0, 200))}, which is not a URL.`);
      }
      current = new URL(location, current).toString();
    }
  }

  /**
   * A GET of the bytes of a file at `url` (where any redirects ended), whose body is read straight
   * into reused buffers: it is not redirected, nor decoded.
   */
  async getBulk(url: string, options: { headers: Record<string, string>; signal: AbortSignal }): Promise<BulkResponse> {
    const target = new URL(url);
    if (this.addresses.refusesOnItsFace(target)) throw blockedAddress(target.hostname);
    try {
      return await bulkGet({ url: target, ...this.sent(target, options.headers, 'identity'), signal: options.signal });
    } catch (error) {
      throw transportError(error, options.signal);
    }
  }

  close(): Promise<void> {
    this.exchanges.close();
    return Promise.resolve();
  }
}

/** The response as readers take it: its body decoded, and a length only where it counts the bytes they get. */
function opened(url: string, response: IncomingMessage, minSpeed: MinSpeed): SourceResponse {
  const headers: Record<string, string | undefined> = Object.fromEntries(
    Object.entries(response.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]),
  );
  const decoded = decodedBody(response);
  if (decoded) delete headers['content-length'];
  const body = heldBody(decoded ?? response);
  // As with the response: its reader hears of its failure, and until one comes it must not go unheard.
  body.on('error', () => {});
  return { url, status: response.statusCode ?? 0, headers, body, floor: new SpeedFloor(minSpeed) };
}

function blockedAddress(host: string): DownloadError {
  return new DownloadError('blocked_address', `The source ${host} is on a private or loopback address, which this server does not fetch from.`);
}

/** A source answer that is not a success, as the contract's error: 5xx, 408 and 429 may pass. */
function httpStatusError(status: number): DownloadError {
  const retryable = status >= 500 || status === 408 || status === 429;
  return new DownloadError('source_http_error', `The source answered HTTP ${status}.`, retryable);
}

/** Maps a failure of the connection (before or during the body) to the contract's codes. */
export function transportError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted || error instanceof DownloadError) return signal?.reason ?? error;
  const withCause = error as { code?: string; cause?: { code?: string; host?: string }; host?: string; hostname?: string };
  const code = withCause.code ?? '';
  if (code === BLOCKED_ADDRESS || withCause.cause?.code === BLOCKED_ADDRESS) {
    return blockedAddress(withCause.host ?? withCause.hostname ?? withCause.cause?.host ?? 'source');
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new DownloadError('source_unreachable', 'The source host name could not be resolved.', code === 'EAI_AGAIN');
  }
  if (/^E(CONN|PIPE|HOSTUNREACH|NETUNREACH|TIMEDOUT)/.test(code) || code === 'ERR_STREAM_PREMATURE_CLOSE' || code.startsWith('UND_ERR')) {
    return new DownloadError('source_unreachable', `The connection to the source failed (${code}).`, true);
  }
  if (code.startsWith('HPE_')) return new DownloadError('source_http_error', `The source's answer is not valid HTTP (${code}).`);
  // zlib's codes, and brotli's (ERR__ERROR_FORMAT_...), for a body that does not decode.
  if (code.startsWith('Z_') || code.startsWith('ERR__ERROR') || code === 'ERR_BROTLI_DECOMPRESSION_FAILED') {
    return new DownloadError('unsupported_source', `The source's compressed answer could not be decoded (${code}).`);
  }
  if (/CERT|SSL|TLS|UNABLE_TO_/.test(code)) return new DownloadError('source_unreachable', `TLS with the source failed (${code}).`);
  return error;
}

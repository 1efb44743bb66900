import { Agent, errors, request, type Dispatcher } from 'undici';
import { DownloadError } from '../downloads/errors.ts';

// One HTTP client for every source kind: redirects are followed here, hop by hop, so that each hop
// is a request of its own (and can be checked like the first), and transport failures become the
// contract's error codes.

const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const agent = new Agent({
  connectTimeout: 15_000,
  headersTimeout: 30_000,
  // The idle timeout while streaming: a source that stops sending for this long has stalled.
  bodyTimeout: 30_000,
  keepAliveTimeout: 10_000,
});

export type SourceResponse = {
  url: string;
  status: number;
  headers: Record<string, string | undefined>;
  body: Dispatcher.ResponseData['body'];
};

function flatten(headers: Dispatcher.ResponseData['headers']): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]));
}

export async function httpGet(url: string, options: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<SourceResponse> {
  let current = url;
  for (let hop = 0; ; hop++) {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(current, {
        method: 'GET',
        dispatcher: agent,
        headers: { 'user-agent': 'video-download-service', ...options.headers },
        signal: options.signal,
      });
    } catch (error) {
      throw transportError(error, options.signal);
    }
    const location = response.headers.location;
    if (!REDIRECTS.has(response.statusCode) || typeof location !== 'string') {
      return { url: current, status: response.statusCode, headers: flatten(response.headers), body: response.body };
    }
    await response.body.dump();
    if (hop >= MAX_REDIRECTS) throw new DownloadError('source_http_error', `The source redirected more than ${MAX_REDIRECTS} times.`);
    current = new URL(location, current).toString();
  }
}

/** A source answer that is not a success, as the contract's error: 5xx, 408 and 429 may pass. */
export function httpStatusError(status: number): DownloadError {
  const retryable = status >= 500 || status === 408 || status === 429;
  return new DownloadError('source_http_error', `The source answered HTTP ${status}.`, retryable);
}

/** Maps a failure of the connection (before or during the body) to the contract's codes. */
export function transportError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted || error instanceof DownloadError) return signal?.reason ?? error;
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError || error instanceof errors.ConnectTimeoutError) {
    return new DownloadError('source_timeout', 'The source stopped responding.', true);
  }
  const code = (error as { code?: string }).code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new DownloadError('source_unreachable', 'The source host name could not be resolved.', code === 'EAI_AGAIN');
  }
  if (error instanceof errors.SocketError || /^E(CONN|PIPE|HOSTUNREACH|NETUNREACH|TIMEDOUT)/.test(code) || code.startsWith('UND_ERR')) {
    return new DownloadError('source_unreachable', `The connection to the source failed (${code || 'closed'}).`, true);
  }
  if (/CERT|SSL|TLS/.test(code)) return new DownloadError('source_unreachable', `TLS with the source failed (${code}).`);
  return error;
}

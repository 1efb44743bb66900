import { DownloadError } from '../core/errors.ts';
import { requireStatus, transportError, type SourceHttp, type SourceResponse } from './guarded-client.ts';

// A body read whole into memory has a ceiling, and reading stops at the first byte past it: a URL
// that streams without end cannot fill the memory.

export type BodyLimit = { maxBytes: number; tooLarge(url: string): string };

/** The body of a response already open (and known to be a success), whole, within `limit`. */
export async function readWhole(response: SourceResponse, limit: BodyLimit, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > limit.maxBytes) throw new DownloadError('unsupported_source', limit.tooLarge(response.url));
      response.floor.arrived((chunk as Buffer).length);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    throw transportError(error, signal);
  }
  return Buffer.concat(chunks);
}

/**
 * The body of a GET of `url`, whole; `url` in the result is where it really came from, after
 * redirects. A `document` (playlist, manifest, page) is asked for compressed.
 */
export async function fetchWhole(
  http: SourceHttp,
  url: string,
  limit: BodyLimit,
  signal: AbortSignal,
  document = false,
): Promise<{ url: string; body: Buffer }> {
  const response = requireStatus(await http.get(url, { signal, document }));
  return { url: response.url, body: await readWhole(response, limit, signal) };
}

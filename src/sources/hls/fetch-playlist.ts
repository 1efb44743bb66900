import { DownloadError } from '../../downloads/errors.ts';
import { httpGet, httpStatusError, transportError } from '../http.ts';

// Far above any real VOD playlist (ten hours of one-second segments is about 2 MB), and low enough
// that a URL which streams endlessly cannot fill the worker's memory.
const MAX_PLAYLIST_BYTES = 16 * 1024 * 1024;

/** Fetches a playlist; `url` in the result is where it really came from, after redirects. */
export async function fetchPlaylist(url: string, signal: AbortSignal): Promise<{ url: string; text: string }> {
  const response = await httpGet(url, { signal });
  if (response.status < 200 || response.status >= 300) {
    await response.body.dump().catch(() => {});
    throw httpStatusError(response.status);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_PLAYLIST_BYTES) {
        throw new DownloadError('unsupported_source', `The HLS playlist at ${response.url} is larger than ${MAX_PLAYLIST_BYTES} bytes.`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    throw transportError(error, signal);
  }
  return { url: response.url, text: Buffer.concat(chunks).toString('utf8') };
}

import type { SourceHttp } from '../http.ts';

// Far above any real VOD playlist (ten hours of one-second segments is about 2 MB), and low enough
// that a URL which streams endlessly cannot fill the worker's memory.
const MAX_PLAYLIST_BYTES = 16 * 1024 * 1024;

/** Fetches a playlist; `url` in the result is where it really came from, after redirects. */
export async function fetchPlaylist(http: SourceHttp, url: string, signal: AbortSignal): Promise<{ url: string; text: string }> {
  const fetched = await http.getBody(url, {
    signal,
    maxBytes: MAX_PLAYLIST_BYTES,
    tooLarge: `The HLS playlist at ${url} is larger than ${MAX_PLAYLIST_BYTES} bytes.`,
  });
  return { url: fetched.url, text: fetched.body.toString('utf8') };
}

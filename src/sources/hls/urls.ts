import { DownloadError } from '../../core/errors.ts';

/** A playlist's URI made absolute against the URL the playlist was fetched from. */
export function resolveUri(uri: string, base: string): string {
  let url: URL;
  try {
    url = new URL(uri, base);
  } catch {
    throw new DownloadError('unsupported_source', `The HLS playlist at ${base} refers to an invalid URI: ${uri}`);
  }
  // Everything in a plan is fetched over HTTP; a data: or skd: URI here cannot be.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DownloadError('unsupported_source', `The HLS playlist at ${base} refers to ${url.protocol} URIs, which are not supported.`);
  }
  return url.toString();
}

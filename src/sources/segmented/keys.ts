import { DownloadError } from '../../downloads/errors.ts';
import { httpGet, httpStatusError, transportError } from '../http.ts';

const AES_128_KEY_BYTES = 16;

/** AES-128 keys by URI: every segment of a stream usually shares one, fetched once. */
export class KeyCache {
  private readonly keys = new Map<string, Promise<Buffer>>();

  get(uri: string, signal: AbortSignal): Promise<Buffer> {
    let key = this.keys.get(uri);
    if (!key) {
      key = fetchKey(uri, signal);
      this.keys.set(uri, key);
      // A failed fetch is not kept, so that the segment's retry asks for the key again.
      key.catch(() => this.keys.delete(uri));
    }
    return key;
  }
}

async function fetchKey(uri: string, signal: AbortSignal): Promise<Buffer> {
  const response = await httpGet(uri, { signal });
  if (response.status !== 200) {
    await response.body.dump().catch(() => {});
    throw httpStatusError(response.status);
  }
  let key = Buffer.alloc(0);
  try {
    for await (const chunk of response.body) {
      key = Buffer.concat([key, chunk as Buffer]);
      // A key is tiny; anything longer is not one, and need not be read to the end.
      if (key.length > AES_128_KEY_BYTES) break;
    }
  } catch (error) {
    throw transportError(error, signal);
  }
  if (key.length !== AES_128_KEY_BYTES) {
    throw new DownloadError('unsupported_source', `The AES-128 key at ${uri} is not ${AES_128_KEY_BYTES} bytes long.`);
  }
  return key;
}

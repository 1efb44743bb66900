import { DownloadError } from '../../core/errors.ts';
import type { SourceHttp } from '../../net/guarded-client.ts';
import { fetchWhole, type BodyLimit } from '../../net/whole-body.ts';

const AES_128_KEY_BYTES = 16;
const notAKey = (url: string) => `The AES-128 key at ${url} is not ${AES_128_KEY_BYTES} bytes long.`;
const AES_128_KEY: BodyLimit = { maxBytes: AES_128_KEY_BYTES, tooLarge: notAKey };

/** AES-128 keys by URI: every segment of a stream usually shares one, fetched once. */
export class KeyCache {
  private readonly keys = new Map<string, Promise<Buffer>>();

  constructor(private readonly http: SourceHttp) {}

  get(uri: string, signal: AbortSignal): Promise<Buffer> {
    let key = this.keys.get(uri);
    if (!key) {
      key = this.fetchKey(uri, signal);
      this.keys.set(uri, key);
      // A failed fetch is not kept, so that the segment's retry asks for the key again.
      key.catch(() => this.keys.delete(uri));
    }
    return key;
  }

  private async fetchKey(uri: string, signal: AbortSignal): Promise<Buffer> {
    const { body } = await fetchWhole(this.http, uri, AES_128_KEY, signal);
    if (body.length !== AES_128_KEY_BYTES) throw new DownloadError('unsupported_source', notAKey(uri));
    return body;
  }
}

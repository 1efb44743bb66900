import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from '../../generated/api.ts';
import { ProblemError } from './problem.ts';
import { saveFile, type FetchFn, type SavedFile, type SaveProgress } from './save.ts';
import { FINAL_STATUSES, type CreateDownload, type Download, type DownloadPage, type ListQuery } from './types.ts';
import { watchDownload, type WatchOptions } from './watch.ts';

/** JSON and problem+json: the answers the SDK reads (the event stream it reads as a stream). */
type Json = `application/${string}json`;

export type ClientOptions = {
  /** Where the service answers, with its BASE_PATH: `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** One of the server's API_KEYS, when it has any. */
  apiKey?: string;
  /** A fetch to use instead of the global one. */
  fetch?: FetchFn;
};

export type WaitOptions = WatchOptions & { onProgress?: (download: Download) => void };
export type SaveOptions = WaitOptions & { onBytes?: (progress: SaveProgress) => void };

export type VideoDownloadClient = {
  create(body: CreateDownload, options?: { idempotencyKey?: string; signal?: AbortSignal }): Promise<Download>;
  get(id: string, options?: { signal?: AbortSignal }): Promise<Download>;
  list(query?: ListQuery, options?: { signal?: AbortSignal }): Promise<DownloadPage>;
  cancel(id: string, options?: { signal?: AbortSignal }): Promise<Download>;
  /** Each state of the download as it happens, the current one first; ends after a final status. */
  watch(id: string, options?: WatchOptions): AsyncGenerator<Download, void, undefined>;
  /** The download once it is final; throws ProblemError when it failed. */
  wait(id: string, options?: WaitOptions): Promise<Download>;
  /** Waits for the download, then writes its file to `path`, resuming and checking its sha256. */
  save(id: string, path: string, options?: SaveOptions): Promise<SavedFile>;
  /** The openapi-fetch client underneath, typed from openapi.yaml, for anything else. */
  raw: Client<paths, Json>;
};

/** A client of one video download service, every answer typed from its openapi.yaml. */
export function createClient({ baseUrl, apiKey, fetch: fetchFn = (request) => globalThis.fetch(request) }: ClientOptions): VideoDownloadClient {
  const raw = createFetchClient<paths, Json>({
    baseUrl: baseUrl.replace(/\/+$/, ''),
    fetch: fetchFn,
    headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
    // `status` is one comma-separated value, as openapi.yaml describes it (form, explode: false).
    querySerializer: { array: { style: 'form', explode: false } },
  });

  /** The data of a 2xx answer; anything else becomes a ProblemError. */
  async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok || data === undefined) throw await ProblemError.fromResponse(response, error);
    return data;
  }

  const client: VideoDownloadClient = {
    create: (body, { idempotencyKey, signal } = {}) =>
      ok(raw.POST('/downloads', { body, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}, signal })),
    get: (id, { signal } = {}) => ok(raw.GET('/downloads/{download_uuid}', { params: { path: { download_uuid: id } }, signal })),
    list: (query = {}, { signal } = {}) => ok(raw.GET('/downloads', { params: { query }, signal })),
    cancel: (id, { signal } = {}) => ok(raw.DELETE('/downloads/{download_uuid}', { params: { path: { download_uuid: id } }, signal })),
    watch: (id, options) => watchDownload(raw, id, options),
    async wait(id, { signal, onProgress } = {}) {
      for await (const download of watchDownload(raw, id, { signal })) {
        onProgress?.(download);
        if (FINAL_STATUSES.includes(download.status)) {
          if (download.status === 'failed') throw ProblemError.ended(download);
          return download;
        }
      }
      // The stream only ends after a final status; reaching here means it did not say one.
      throw ProblemError.ended(await client.get(id, { signal }));
    },
    async save(id, path, { signal, onProgress, onBytes } = {}) {
      const download = await client.wait(id, { signal, onProgress });
      return saveFile(fetchFn, download, path, { signal, onProgress: onBytes });
    },
    raw,
  };
  return client;
}

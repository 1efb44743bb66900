import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from '../../generated/api.ts';
import { ProblemError } from './problem.ts';
import { saveFile, type FetchFn, type SavedFile, type SaveProgress } from './save.ts';
import { subscriptionClient, type SubscriptionClient } from './subscriptions.ts';
import {
  FINAL_STATUSES,
  isCollectionFinal,
  type Collection,
  type CollectionListQuery,
  type CollectionPage,
  type CollectionPreview,
  type CreateCollection,
  type CreateDownload,
  type Download,
  type DownloadPage,
  type ListQuery,
  type PreviewCollection,
} from './types.ts';
import { watchCollection, watchDownload, type WatchOptions } from './watch.ts';

/** JSON and problem+json: the answers the SDK reads (the event stream it reads as a stream, an archive as text). */
export type Json = `application/${string}json`;

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
type Signal = { signal?: AbortSignal };

/** A collection's children in index order come a page of this many at a time (the most GET /downloads gives). */
const CHILDREN_PAGE = 100;

/** Collections (playlists, feeds, pages of several videos, batches): each becomes ordinary downloads, its children. */
export type CollectionClient = {
  create(body: CreateCollection, options?: { idempotencyKey?: string; signal?: AbortSignal }): Promise<Collection>;
  /** What a URL holds, read as a collection would read it; nothing is created. */
  preview(body: PreviewCollection, options?: Signal): Promise<CollectionPreview>;
  get(id: string, options?: Signal): Promise<Collection>;
  list(query?: CollectionListQuery, options?: Signal): Promise<CollectionPage>;
  /** Cancels every child not yet final; completed children keep their files. */
  cancel(id: string, options?: Signal): Promise<Collection>;
  /** Every child, in the collection's order (`collection.index`). */
  children(id: string, options?: Signal): Promise<Download[]>;
  /** Each state of the collection (status and counts) as it happens, the current one first; ends after a final status. */
  watch(id: string, options?: WatchOptions): AsyncGenerator<Collection, void, undefined>;
  /** The collection once it is final, whatever its children's outcomes (its counts tell them). */
  wait(id: string, options?: WatchOptions & { onProgress?: (collection: Collection) => void }): Promise<Collection>;
};

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
  collections: CollectionClient;
  subscriptions: SubscriptionClient;
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
    collections: collectionClient(raw, ok),
    subscriptions: subscriptionClient(raw, ok),
    raw,
  };
  return client;
}

/** The data of a 2xx answer, or the ProblemError of any other. */
export type Ok = <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>) => Promise<T>;

function collectionClient(raw: Client<paths, Json>, ok: Ok): CollectionClient {
  const path = (id: string) => ({ params: { path: { collection_id: id } } });
  const collections: CollectionClient = {
    create: (body, { idempotencyKey, signal } = {}) =>
      ok(raw.POST('/collections', { body, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}, signal })),
    preview: (body, { signal } = {}) => ok(raw.POST('/collections/preview', { body, signal })),
    get: (id, { signal } = {}) => ok(raw.GET('/collections/{collection_id}', { ...path(id), signal })),
    list: (query = {}, { signal } = {}) => ok(raw.GET('/collections', { params: { query }, signal })),
    cancel: (id, { signal } = {}) => ok(raw.DELETE('/collections/{collection_id}', { ...path(id), signal })),
    async children(id, { signal } = {}) {
      const children: Download[] = [];
      let cursor: string | undefined;
      do {
        const page = await ok(raw.GET('/downloads', { params: { query: { collection_id: id, limit: CHILDREN_PAGE, ...(cursor ? { cursor } : {}) } }, signal }));
        children.push(...page.items);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return children;
    },
    watch: (id, options) => watchCollection(raw, id, options),
    async wait(id, { signal, onProgress } = {}) {
      for await (const collection of watchCollection(raw, id, { signal })) {
        onProgress?.(collection);
        if (isCollectionFinal(collection)) return collection;
      }
      // The stream only ends after a final status; reaching here means it did not say one.
      return collections.get(id, { signal });
    },
  };
  return collections;
}

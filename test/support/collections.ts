import type { components } from '../../generated/api.ts';
import type { Download, TestHttp } from './api.ts';
import { waitFor } from './waiting.ts';

// Collections over HTTP, each answer checked against the contract as every test request is.

export type Collection = components['schemas']['Collection'];
export type CollectionStatus = components['schemas']['CollectionStatus'];

export async function createCollection(http: TestHttp, body: unknown, headers: Record<string, string> = {}) {
  return http.request('POST', '/collections', '/collections', { body, headers });
}

export async function getCollection(http: TestHttp, id: string): Promise<Collection> {
  const res = await http.request('GET', `/collections/${id}`, '/collections/{collection_id}');
  if (res.status !== 200) throw new Error(`GET /collections/${id} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Collection;
}

/** Polls the collection until its status is one of `statuses`. */
export function waitForCollection(http: TestHttp, id: string, statuses: CollectionStatus[], timeoutMs = 30_000): Promise<Collection> {
  let last: Collection | undefined;
  return waitFor(
    `collection ${id} to become ${statuses.join(' or ')} (last: ${JSON.stringify(last)})`,
    async () => {
      last = await getCollection(http, id);
      return statuses.includes(last.status) && last;
    },
    timeoutMs,
  );
}

/** Every child of the collection, in index order, paging through GET /downloads?collection_id=. */
export async function childrenOf(http: TestHttp, id: string, pageSize = 100): Promise<Download[]> {
  const children: Download[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `collection_id=${id}&limit=${pageSize}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await http.request('GET', `/downloads?${query}`, '/downloads');
    if (res.status !== 200) throw new Error(`GET /downloads?${query} answered ${res.status}: ${JSON.stringify(res.body)}`);
    const page = res.body as { items: Download[]; next_cursor: string | null };
    children.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return children;
}

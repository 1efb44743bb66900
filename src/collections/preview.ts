import type { components } from '../../generated/api.ts';
import { CreateRequestCheck, InvalidDownloadRequest, type CreateRules } from '../downloads/create-rules.ts';
import type { Lister } from './expand.ts';

export type PreviewInput = components['schemas']['PreviewCollection'];
export type Preview = components['schemas']['CollectionPreview'];

/**
 * What a URL holds, read as a collection would read it, with nothing created. Throws
 * InvalidDownloadRequest for a request that cannot be read, and the reading's DownloadError when
 * nothing can be found.
 */
export async function previewCollection(
  deps: { list: Lister; rules: CreateRules; maxItems: number },
  input: PreviewInput,
  signal: AbortSignal,
): Promise<Preview> {
  new CreateRequestCheck(deps.rules).checkSource(input.url, '/body/url');
  const limit = input.limit ?? deps.maxItems;
  if (limit > deps.maxItems) {
    throw new InvalidDownloadRequest(
      '/body/limit',
      `must be at most ${deps.maxItems}`,
      `This server takes at most ${deps.maxItems} entries from one source (MAX_COLLECTION_ITEMS).`,
    );
  }
  const listing = await deps.list(input.url, { limit, signal });
  return {
    title: listing.title,
    extractor: listing.extractor,
    entries: listing.entries.map((entry, i) => ({ index: i + 1, id: entry.id, url: entry.url, title: entry.title, duration_seconds: entry.durationSeconds })),
    truncated: listing.truncated,
  };
}

import { DownloadError } from '../core/errors.ts';
import { AddressPolicy } from '../net/address-policy.ts';
import type { Listing } from '../sources/listing/index.ts';
import { childrenOf, type ChildEntry } from './children.ts';
import type { CollectionRepository } from './repository.ts';

/** Reads what a URL holds: at most `limit` entries, in the source's order (sources/listing). */
export type Lister = (url: string, options: { limit: number; signal: AbortSignal }) => Promise<Listing>;

export type ExpandDeps = {
  collections: CollectionRepository;
  list: Lister;
  allowPrivateAddresses: ConstructorParameters<typeof AddressPolicy>[0];
};

/**
 * The collection job: reads the collection's source and makes its children. A failure that may
 * pass (the source answered 503, timed out) is thrown for the job to be retried, until
 * `lastAttempt`; any other, or on the last attempt, fails the collection with its code.
 */
export async function expandCollection(deps: ExpandDeps, id: string, signal: AbortSignal, lastAttempt: boolean): Promise<void> {
  const collection = await deps.collections.find(id);
  if (collection?.status !== 'expanding' || !collection.url) return;
  let listing: Listing;
  try {
    listing = await deps.list(collection.url, { limit: collection.entryLimit, signal });
  } catch (error) {
    if (signal.aborted) throw error;
    const failure = error instanceof DownloadError ? error : new DownloadError('internal_error', 'Reading the collection failed unexpectedly.', true);
    if (failure.retryable && !lastAttempt) throw failure;
    await deps.collections.failExpansion(id, failure);
    return;
  }
  const addresses = new AddressPolicy(deps.allowPrivateAddresses);
  const picks = collection.entryPicks.length ? new Set(collection.entryPicks) : null;
  const entries: ChildEntry[] = listing.entries.flatMap((entry, i) =>
    picks && !picks.has(i + 1) ? [] : [{ index: i + 1, url: entry.url, refused: refusal(addresses, entry.url) }],
  );
  await deps.collections.expand(id, {
    title: listing.title,
    extractor: listing.extractor,
    truncated: listing.truncated,
    children: childrenOf(collection, entries),
  });
}

/** An entry whose address is private on its face is never fetched: its child fails at once. */
export function refusal(addresses: AddressPolicy, url: string): ChildEntry['refused'] {
  return addresses.refusesOnItsFace(new URL(url))
    ? { code: 'blocked_address', message: 'The entry points to a private or loopback address, which this server does not fetch from.' }
    : null;
}

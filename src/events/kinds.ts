import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Collection } from '../collections/present.ts';
import { readCollection } from '../collections/read.ts';
import type { CollectionRepository } from '../collections/repository.ts';
import type { DownloadRepository } from '../downloads/repository.ts';
import type { StreamedKind } from './event-streams.ts';

/** A download's events: its row, read again on each change, until a final status. */
export function downloadEvents(downloads: DownloadRepository): StreamedKind<Row> {
  return { event: 'download', read: (id) => downloads.find(id), final: ['completed', 'failed', 'cancelled', 'expired'] };
}

/** A collection's events: it with its counts, read again as it or any child changes, until a final status. */
export function collectionEvents(collections: CollectionRepository): StreamedKind<Collection> {
  return { event: 'collection', read: (id) => readCollection(collections, id, null), final: ['completed', 'failed', 'cancelled'] };
}

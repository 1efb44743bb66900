import { randomUUID } from 'node:crypto';
import { presentClip } from '../core/clip.ts';
import { parseQuality } from '../core/quality.ts';
import type { CreateDownloadInput } from '../downloads/create-rules.ts';
import { requestHash } from '../downloads/create.ts';
import type { NewChild } from '../downloads/repository.ts';
import type { CollectionRow } from './repository.ts';

/** One entry to make a child of: its position in the source, its URL, and why it is refused, if it is. */
export type ChildEntry = { index: number; url: string; refused: { code: string; message: string } | null };

/** The template a collection's children are made with, as the create request gave it. */
export function templateOf(
  collection: Pick<CollectionRow, 'quality' | 'mode' | 'audioFormat' | 'subtitles' | 'clipStartSeconds' | 'clipEndSeconds' | 'callbackUrl'>,
): Omit<CreateDownloadInput, 'url'> {
  const clip = presentClip(collection);
  return {
    quality: parseQuality(collection.quality),
    mode: collection.mode as CreateDownloadInput['mode'],
    ...(collection.audioFormat ? { audio_format: collection.audioFormat as CreateDownloadInput['audio_format'] } : {}),
    subtitles: collection.subtitles,
    ...(clip ? { clip } : {}),
    ...(collection.callbackUrl ? { callback_url: collection.callbackUrl } : {}),
  };
}

/** The downloads a collection's entries become: every one held until the collection gives it a place. */
export function childrenOf(
  collection: Pick<
    CollectionRow,
    'id' | 'owner' | 'quality' | 'mode' | 'audioFormat' | 'subtitles' | 'clipStartSeconds' | 'clipEndSeconds' | 'callbackUrl' | 'linkBase'
  >,
  entries: ChildEntry[],
): NewChild[] {
  const template = templateOf(collection);
  return entries.map((entry) => ({
    id: randomUUID(),
    owner: collection.owner,
    url: entry.url,
    quality: collection.quality,
    requestedFilename: null,
    callbackUrl: collection.callbackUrl,
    mode: collection.mode,
    audioFormat: collection.audioFormat,
    subtitles: collection.subtitles,
    clipStartSeconds: collection.clipStartSeconds,
    clipEndSeconds: collection.clipEndSeconds,
    callbackState: collection.callbackUrl ? 'pending' : null,
    linkBase: collection.linkBase,
    idempotencyKey: null,
    requestHash: requestHash({ url: entry.url, ...template }),
    collectionId: collection.id,
    collectionIndex: entry.index,
    held: true,
    errorCode: entry.refused?.code ?? null,
    errorMessage: entry.refused?.message ?? null,
  }));
}

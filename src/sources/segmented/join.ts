import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { TrackLayout } from './layout.ts';

/**
 * Joins a track's pieces, in order, into the track's file (renamed into place when whole), then
 * drops the pieces: from then on the track file stands for them, also for a later attempt.
 */
export async function joinTrack(track: TrackLayout, signal: AbortSignal): Promise<void> {
  const part = `${track.file}.part`;
  const pieces = track.pieces.map((piece) => piece.file);
  async function* chained() {
    for (const file of pieces) yield* createReadStream(file);
  }
  try {
    await pipeline(chained(), createWriteStream(part), { signal });
    await rename(part, track.file);
  } finally {
    await rm(part, { force: true });
  }
  await Promise.all(pieces.map((file) => rm(file, { force: true })));
}

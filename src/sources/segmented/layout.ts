import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ByteRange, MediaPlan, SegmentKey, Track } from '../types.ts';

// Where each track of a plan lives on disk. The file name carries a digest of what its pieces are
// fetched from, so a retry whose plan changed (another variant, other URLs) never takes a file of
// the earlier plan for its own.

/** One init section or segment: the `index`th piece of its track. */
export type Piece = { url: string; byteRange?: ByteRange; key?: SegmentKey; init: boolean; index: number };

export type TrackLayout = {
  kind: Track['kind'];
  /** The init section first, then the segments, in play order. */
  pieces: Piece[];
  /** The track's pieces, one after another, in one file. */
  file: string;
};

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function layOut(plan: MediaPlan, dir: string): TrackLayout[] {
  return plan.tracks.map((track, t) => {
    const parts = track.init ? [track.init, ...track.segments] : track.segments;
    const pieces = parts.map((part, index) => ({ ...part, init: part === track.init, index }));
    const identities = pieces.map((part) => [part.url, part.byteRange ?? null, part.key ?? null]);
    return { kind: track.kind, pieces, file: path.join(dir, `track${t}-${digest(JSON.stringify(identities))}`) };
  });
}

/** The plan's size when every piece has a byte range, else null. */
export function knownSize(pieces: Piece[]): number | null {
  let sum = 0;
  for (const piece of pieces) {
    if (!piece.byteRange) return null;
    sum += piece.byteRange.length;
  }
  return sum;
}

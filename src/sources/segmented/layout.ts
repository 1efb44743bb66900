import { createHash } from 'node:crypto';
import path from 'node:path';
import { sizeOf } from '../../storage/work-folders.ts';
import type { ByteRange, MediaPlan, SegmentKey, Track } from '../types.ts';

// Where each part of a plan lives on disk. A piece's file name carries a digest of what it was
// fetched from, so a retry whose plan changed (another variant, other URLs) never takes a file of
// the earlier plan for one of its own.

export type Piece = { url: string; byteRange?: ByteRange; key?: SegmentKey; init: boolean; file: string };

export type TrackLayout = {
  kind: Track['kind'];
  /** The init section first, then the segments, in play order. */
  pieces: Piece[];
  /** The track's pieces joined into one file. */
  file: string;
};

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function layOut(plan: MediaPlan, dir: string): TrackLayout[] {
  return plan.tracks.map((track, t) => {
    const parts = track.init ? [track.init, ...track.segments] : track.segments;
    const pieces = parts.map((part, i) => {
      const identity = [part.url, part.byteRange ? `${part.byteRange.offset}+${part.byteRange.length}` : '', part.key ? `${part.key.uri} ${part.key.iv}` : ''];
      return { ...part, init: part === track.init, file: path.join(dir, `t${t}-${i}-${digest(identity.join('\n'))}`) };
    });
    const trackDigest = digest(pieces.map((piece) => path.basename(piece.file)).join('\n'));
    return { kind: track.kind, pieces, file: path.join(dir, `track${t}-${trackDigest}`) };
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

/**
 * What an earlier attempt left finished (a joined track, or single pieces): the pieces still to
 * fetch, and how many bytes of the plan are done, counted like the download counts them.
 */
export async function unfinished(tracks: TrackLayout[]): Promise<{ pieces: Piece[]; doneBytes: number }> {
  const pieces: Piece[] = [];
  let doneBytes = 0;
  for (const track of tracks) {
    const joined = await sizeOf(track.file);
    if (joined !== null) {
      doneBytes += knownSize(track.pieces) ?? joined;
      continue;
    }
    for (const piece of track.pieces) {
      const size = await sizeOf(piece.file);
      if (size === null) pieces.push(piece);
      else doneBytes += piece.byteRange?.length ?? size;
    }
  }
  return { pieces, doneBytes };
}

import type { Span } from '../../files/spans.ts';

// How the bytes of a direct file still missing are shared among connections. A connection that
// runs out of pieces takes over the second half of the piece with most left (whose connection then
// stops at the half), so that the connections end together rather than one slow piece holding
// the end of the download; one connection's whole file is split the same way.

/** Below this a piece is not worth a connection of its own when the rest is shared out. */
export const MIN_PIECE_BYTES = 4 * 1024 * 1024;
/**
 * Near the end, halves down to this are taken over from a connection that is slow (its last bytes
 * would take TAKE_OVER_IF_LEFT_MS or more at its speed so far): a throttled source often lets a new
 * connection start with a burst, so an idle connection ends them sooner.
 */
export const MIN_TAKEN_BYTES = 256 * 1024;
const TAKE_OVER_IF_LEFT_MS = 100;
/**
 * A connection's speed is trusted once it has read this long: its first bytes may be a burst, and
 * the bytes on their way to it (which are fetched twice when it is let go early) are then few.
 */
const SPEED_AFTER_MS = 250;

export class Piece {
  /** Where the next byte goes; `end` may move back while the piece runs, never past `position`. */
  position: number;
  /** How far the response it is read from goes: its end may move back out to there. */
  reach: number;

  /** When its response began to be read, and where it then was: its speed so far. */
  private reading: { since: number; from: number } | null = null;

  constructor(
    readonly start: number,
    public end: number,
  ) {
    this.position = start;
    this.reach = end;
  }

  get left(): number {
    return this.end - this.position;
  }

  startReading(now = Date.now()): void {
    this.reading = { since: now, from: this.position };
  }

  /** How long its connection will take over what is left at its speed so far; null before that speed is known. */
  msLeft(now: number): number | null {
    if (!this.reading || now - this.reading.since < SPEED_AFTER_MS) return null;
    const bytesPerMs = (this.position - this.reading.from) / (now - this.reading.since);
    return bytesPerMs > 0 ? this.left / bytesPerMs : Infinity;
  }
}

export class PieceQueue {
  private readonly waiting: Piece[];
  private readonly running = new Set<Piece>();

  /** `gaps` are the spans missing, in order, all waiting; pieces are cut on multiples of `grain`. */
  constructor(
    gaps: readonly Span[],
    private readonly grain: number,
  ) {
    this.waiting = gaps.map((gap) => new Piece(gap.start, gap.end));
  }

  /** Whether a piece is still to be fetched, or is being fetched. */
  get unfinished(): boolean {
    return this.waiting.length > 0 || this.running.size > 0;
  }

  /** A piece already running on a response at hand. */
  adopt(piece: Piece): void {
    this.running.add(piece);
  }

  /**
   * Cuts what is left of a running piece into as many as `count` pieces of at least
   * MIN_PIECE_BYTES, before any of them is asked for, so that no two ask for the same bytes: the
   * piece keeps the first, the others wait. False when there is not enough left to cut.
   */
  shareOut(piece: Piece, count: number): boolean {
    const size = Math.max(MIN_PIECE_BYTES, Math.ceil(piece.left / count));
    const edges: number[] = [];
    for (let edge = this.edgeAfter(piece.position + size); piece.end - edge >= MIN_PIECE_BYTES; edge = this.edgeAfter(edge + size)) edges.push(edge);
    if (edges.length === 0) return false;
    const ends = [...edges.slice(1), piece.end];
    this.waiting.push(...edges.map((start, i) => new Piece(start, ends[i]!)));
    piece.end = edges[0]!;
    return true;
  }

  /** Undoes shareOut: the piece takes back everything waiting, unless it has stopped reading already. */
  unshare(piece: Piece): void {
    if (piece.position >= piece.end) return;
    piece.end = piece.reach;
    this.waiting.length = 0;
  }

  /** The first or the last piece waiting, taken to run. */
  claim(which: 'first' | 'last'): Piece | null {
    const piece = (which === 'first' ? this.waiting.shift() : this.waiting.pop()) ?? null;
    if (piece) this.running.add(piece);
    return piece;
  }

  /**
   * The next piece to run: one waiting, else the second half of the running piece with most left,
   * when both halves are worth a connection, or are at least MIN_TAKEN_BYTES of a slow one.
   */
  next(now = Date.now()): Piece | null {
    const waiting = this.claim('first');
    if (waiting) return waiting;
    let widest: Piece | null = null;
    for (const piece of this.running) if (!widest || piece.left > widest.left) widest = piece;
    if (!widest) return null;
    const half = this.edgeAfter(widest.position + widest.left / 2);
    const smaller = Math.min(half - widest.position, widest.end - half);
    const slow = (widest.msLeft(now) ?? 0) >= TAKE_OVER_IF_LEFT_MS;
    if (smaller < MIN_PIECE_BYTES && !(slow && smaller >= MIN_TAKEN_BYTES)) return null;
    const taken = new Piece(half, widest.end);
    widest.end = half;
    this.running.add(taken);
    return taken;
  }

  private edgeAfter(at: number): number {
    return Math.ceil(at / this.grain) * this.grain;
  }

  done(piece: Piece): void {
    this.running.delete(piece);
  }

  /**
   * A piece its connection could not fetch: the running piece it was cut from takes it back when
   * it is still reading and its response reaches that far, else it waits for another connection.
   */
  giveBack(piece: Piece): void {
    this.running.delete(piece);
    if (piece.left === 0) return;
    for (const before of this.running) {
      if (before.end === piece.position && before.position < before.end && before.reach >= piece.end) {
        before.end = piece.end;
        return;
      }
    }
    this.waiting.unshift(new Piece(piece.position, piece.end));
  }
}

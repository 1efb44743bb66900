import { addSpan, frontOf, gapsOf, spanBytes, spansFrom } from '../../src/files/spans.ts';
import { MIN_PIECE_BYTES, MIN_TAKEN_BYTES, Piece, PieceQueue } from '../../src/sources/direct/pieces.ts';

// How the missing bytes of a direct file are recorded and shared among connections: pure
// functions, no server.

const MiB = 1024 * 1024;

test('when spans are added out of order and touch, then they merge into sorted disjoint spans, and the gaps are what lies between', () => {
  let spans = addSpan([], 10, 20);
  spans = addSpan(spans, 30, 40);
  spans = addSpan(spans, 20, 30);
  spans = addSpan(spans, 50, 60);
  expect(spans).toEqual([
    { start: 10, end: 40 },
    { start: 50, end: 60 },
  ]);
  expect(spanBytes(spans)).toBe(40);
  expect(frontOf(spans)).toBe(0);
  expect(frontOf(addSpan(spans, 0, 10))).toBe(40);
  expect(gapsOf(spans, 70)).toEqual([
    { start: 0, end: 10 },
    { start: 40, end: 50 },
    { start: 60, end: 70 },
  ]);
});

test('when a record of spans is damaged or runs past the file, then only well-formed spans within the file are believed', () => {
  expect(spansFrom('not a list', 100)).toEqual([]);
  expect(spansFrom([{ start: 0, end: 50 }, { start: -5, end: 10 }, { start: 'x', end: 3 }, null, { start: 90, end: 500 }], 100)).toEqual([
    { start: 0, end: 50 },
    { start: 90, end: 100 },
  ]);
});

test('when a running piece is shared out, then the pieces tile its rest on the grain, none under the minimum, and undoing gives it all back', () => {
  const front = new Piece(0, 100 * MiB);
  front.position = 3 * MiB;
  const queue = new PieceQueue([], 8 * MiB);
  queue.adopt(front);
  expect(queue.shareOut(front, 8)).toBe(true);
  const pieces = [front, ...drain(queue)];
  expect(pieces.every((piece, i) => i === 0 || piece.start % (8 * MiB) === 0)).toBe(true);
  expect(pieces.every((piece) => piece.end - piece.position >= MIN_PIECE_BYTES)).toBe(true);
  expect(pieces.map((piece, i) => (i === 0 ? piece.position : piece.start))).toEqual([3 * MiB, ...pieces.slice(0, -1).map((piece) => piece.end)]);
  expect(pieces.at(-1)!.end).toBe(100 * MiB);

  const again = new Piece(0, 100 * MiB);
  const other = new PieceQueue([], 1);
  other.adopt(again);
  other.shareOut(again, 4);
  other.unshare(again);
  expect(again.end).toBe(100 * MiB);
  expect(other.next()).not.toBeNull(); // the running piece can still be halved
});

test('when a connection runs out of pieces, then it takes the second half of the piece with most left, and a refused piece goes back to the piece it was cut from', () => {
  const queue = new PieceQueue([{ start: 0, end: 40 * MiB }], 1);
  const first = queue.claim('first')!;
  first.position = 8 * MiB;
  const half = queue.next()!;
  expect([half.start, half.end, first.end]).toEqual([24 * MiB, 40 * MiB, 24 * MiB]);
  queue.giveBack(half);
  expect(first.end).toBe(40 * MiB);
  // Read from 8 MiB since time 0: `when(ms)` is the time at which its speed so far brings the rest in `ms`.
  first.startReading(0);
  first.position = 40 * MiB - 2 * MIN_TAKEN_BYTES;
  const when = (ms: number) => (ms * (first.position - 8 * MiB)) / first.left;
  // Too little left to be worth two connections, at a speed that brings it in 50 ms.
  expect(queue.next(when(50))).toBeNull();
  // At a speed that takes a second over it, halves down to MIN_TAKEN_BYTES are taken.
  const last = queue.next(when(1000))!;
  expect([last.start, last.end, first.end]).toEqual([40 * MiB - MIN_TAKEN_BYTES, 40 * MiB, 40 * MiB - MIN_TAKEN_BYTES]);
  queue.done(last);
  // But not below.
  first.position = 40 * MiB - 2 * MIN_TAKEN_BYTES + 1;
  expect(queue.next(10 ** 9)).toBeNull();
  queue.done(first);
  expect(queue.unfinished).toBe(false);
});

function drain(queue: PieceQueue): Piece[] {
  const pieces: Piece[] = [];
  for (let piece = queue.claim('first'); piece; piece = queue.claim('first')) pieces.push(piece);
  return pieces;
}

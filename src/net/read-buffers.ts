// The memory bulk connections (bulk-get.ts) read into: each socket read lands in one of its
// connection's two slabs, which take turns filling and being written (in a buffer every connection
// shares, to be copied out, only when neither has room).
// Every open connection's slabs share one budget, and an ended connection's are kept for the next
// (docs/performance.md, "Why the code is as it is", says why).

const MAX_READ_BYTES = 1024 * 1024;
/** Two reads of a fast connection: one slab's writes go as one writev while the other fills. */
const MAX_SLAB_BYTES = 2 * MAX_READ_BYTES;
/**
 * What the slabs of every open connection hold together, at most: one or two connections still read
 * 1 MiB at a time, four downloads over eight connections each 64 KiB, as Node's client does.
 */
const SLABS_BUDGET_BYTES = 8 * 1024 * 1024;
/** Below this the writes a read makes cost more than the memory they save. */
const MIN_SLAB_BYTES = 128 * 1024;

/** Where a socket read lands when its connection's slabs are both busy, before it is copied out. */
const incoming = Buffer.allocUnsafe(MAX_READ_BYTES);

/** Once no connection has been open this long, the spare slabs are let go. */
const SPARE_KEPT_MS = 30_000;

let openConnections = 0;
const spare: Buffer[] = [];
let spareBytes = 0;
let dropSpare: NodeJS.Timeout | undefined;

/**
 * A slab of `size`: the smallest spare that holds it, one larger cut into slabs of this size (the
 * others kept as spares), or a new one. A new buffer while a larger spare lies idle would be garbage
 * the moment the budget let a spare go.
 */
function takeSlab(size: number): Buffer {
  let best = -1;
  for (const [at, buffer] of spare.entries()) if (buffer.length >= size && (best < 0 || buffer.length < spare[best]!.length)) best = at;
  if (best < 0) return Buffer.allocUnsafe(size);
  const [buffer] = spare.splice(best, 1) as [Buffer];
  spareBytes -= buffer.length;
  // The rest is kept in slabs of this size as far as it goes: a slab made for a read larger than
  // the size of its day is of no power of two.
  for (let at = size; at + size <= buffer.length; at += size) keepSpare(buffer.subarray(at, at + size));
  return buffer.subarray(0, size);
}

function keepSpare(buffer: Buffer): void {
  if (spareBytes + buffer.length > SLABS_BUDGET_BYTES) return;
  spare.push(buffer);
  spareBytes += buffer.length;
}

/**
 * The size of a slab made now: the budget shared by the open connections, two slabs each, in
 * powers of two, so that connections opening and closing (a piece each) seldom change it.
 */
function slabBytes(): number {
  let size = MAX_SLAB_BYTES;
  while (size > MIN_SLAB_BYTES && 2 * size * openConnections > SLABS_BUDGET_BYTES) size /= 2;
  return size;
}

type Slab = { buffer: Buffer; used: number; pending: number };

/** The two slabs of one connection. */
export class ConnectionSlabs {
  private slabs: Array<Slab | null> = [null, null];
  private at = 0;
  private wake: (() => void) | null = null;
  private open = true;
  /** The part of a slab the socket reads into next: taken out of the slab (and counted as pending) until its read is held. */
  private lent: { slab: Slab; at: number; size: number } | null = null;

  constructor() {
    openConnections++;
    clearTimeout(dropSpare);
  }

  /**
   * Where the socket reads next: half a slab of today's size, so that a read always fits one, in the
   * slab it will be held in, so that `hold` need not copy it.
   */
  readonly readInto = (): Buffer => {
    // Node asks for the next read's memory after each read, whether or not that one was held.
    this.giveBack();
    const size = slabBytes() / 2;
    if (!this.open || !this.readable) return incoming.subarray(0, size);
    const slab = this.slabFor(size);
    this.lent = { slab, at: slab.used, size };
    slab.used += size;
    slab.pending++;
    return slab.buffer.subarray(this.lent.at, this.lent.at + size);
  };

  /** Whether the next read has a place to go; when not, `whenReadable` says when it has. */
  get readable(): boolean {
    return this.slabs.some((slab) => slab === null || slab.pending === 0);
  }

  whenReadable(wake: () => void): void {
    this.wake = wake;
  }

  /** `bytes` in a slab (copied there unless they were read there), and what to call once it has been written. */
  hold(bytes: Buffer): { copy: Buffer; written: () => void } {
    const lent = this.lent;
    if (lent && bytes.buffer === lent.slab.buffer.buffer && bytes.byteOffset === lent.slab.buffer.byteOffset + lent.at && bytes.length <= lent.size) {
      // Read where it is held: what the loan counted as pending is now this write.
      this.lent = null;
      if (lent.slab.used === lent.at + lent.size) lent.slab.used = lent.at + bytes.length;
      return { copy: bytes, written: () => this.written(lent.slab) };
    }
    const slab = this.slabFor(bytes.length);
    const copy = slab.buffer.subarray(slab.used, slab.used + bytes.length);
    bytes.copy(copy);
    slab.used += bytes.length;
    slab.pending++;
    return { copy, written: () => this.written(slab) };
  }

  /** The connection has ended: nothing more is read. */
  close(): void {
    this.wake = null;
    this.giveBack();
    if (!this.open) return;
    this.open = false;
    for (const [at, slab] of this.slabs.entries()) {
      if (slab?.pending !== 0) continue;
      keepSpare(slab.buffer);
      this.slabs[at] = null;
    }
    if (--openConnections === 0) {
      dropSpare = setTimeout(() => spare.splice(0).forEach((buffer) => (spareBytes -= buffer.length)), SPARE_KEPT_MS);
      dropSpare.unref();
    }
  }

  private slabFor(bytes: number): Slab {
    const size = slabBytes();
    // A slab whose writes have all landed starts over; one larger than today's size is let go.
    for (const [at, slab] of this.slabs.entries()) {
      if (slab?.pending !== 0) continue;
      if (slab.buffer.length <= size) slab.used = 0;
      else {
        keepSpare(slab.buffer);
        this.slabs[at] = null;
      }
    }
    const fits = (slab: Slab | null) => slab !== null && slab.buffer.length - slab.used >= bytes;
    if (fits(this.slabs[this.at]!)) return this.slabs[this.at]!;
    this.at = 1 - this.at;
    if (fits(this.slabs[this.at]!)) return this.slabs[this.at]!;
    // Made where there is none; otherwise only for a read that came while both were busy (it was
    // not waited for): the new one takes the busy one's place, which is let go once its writes land.
    // (Never smaller than the bytes: those that came with the head were read at an earlier size.)
    const made = { buffer: bytes > size ? Buffer.allocUnsafe(bytes) : takeSlab(size), used: 0, pending: 0 };
    this.slabs[this.at] = made;
    return made;
  }

  /** Ends the loan of a part of a slab whose read was not held there (the head of an answer, say). */
  private giveBack(): void {
    const lent = this.lent;
    if (!lent) return;
    this.lent = null;
    if (lent.slab.used === lent.at + lent.size) lent.slab.used = lent.at;
    this.written(lent.slab);
  }

  private written(slab: Slab): void {
    slab.pending--;
    // One the connection no longer holds: it ended, or its place was taken while its writes were on their way.
    if (slab.pending === 0 && (!this.open || !this.slabs.includes(slab))) {
      keepSpare(slab.buffer);
      this.slabs = this.slabs.map((held) => (held === slab ? null : held));
    }
    const wake = this.wake;
    if (slab.pending === 0 && wake && this.readable) {
      this.wake = null;
      wake();
    }
  }
}

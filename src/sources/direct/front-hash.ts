import { createHash } from 'node:crypto';
import { hashFileSpan } from '../../files/hash.ts';
import { addSpan, type Span } from '../../files/spans.ts';

// The sha256 of a file whose pieces arrive out of order, computed while they arrive rather than in
// a pass over the whole file at the end: the first connection's bytes are hashed as it reads them,
// and each piece after them is read back from the disk (where it has just been written, so from
// the page cache) as soon as every byte before it is hashed, into one buffer kept for the file (a
// buffer for each piece would be garbage that V8 leaves for tens of MB).

/** Read back from the page cache, a small buffer costs little more than a large one. */
const READ_BACK_BYTES = 256 * 1024;

export class FrontHash {
  private readonly hash = createHash('sha256');
  private hashed = 0;
  private whole: Span[] = [];
  private reading: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private buffer: Buffer | null = null;

  constructor(private readonly file: string) {}

  /** Bytes read in order from the file's start, while no piece before them is missing. */
  update(bytes: Buffer): void {
    this.hash.update(bytes);
    this.hashed += bytes.length;
  }

  /** A piece now whole on the disk. */
  pieceDone(start: number, end: number): void {
    this.whole = addSpan(this.whole, start, end);
    this.reading = this.reading.then(() => this.catchUp()).catch((error: unknown) => void (this.failure ??= error));
  }

  /** The hash of the file's `size` bytes, once every piece is whole and hashed. */
  async digest(size: number): Promise<string> {
    await this.reading;
    if (this.failure) throw this.failure as Error;
    if (this.hashed !== size) throw new Error(`Only ${this.hashed} of the file's ${size} bytes were hashed.`);
    return this.hash.digest('hex');
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      const next = this.whole.find((span) => span.start <= this.hashed && span.end > this.hashed);
      if (!next) return;
      this.buffer ??= Buffer.allocUnsafe(READ_BACK_BYTES);
      this.hashed = await hashFileSpan(this.hash, this.file, this.hashed, next.end, { buffer: this.buffer });
      // A piece is whole on the disk before it is reported: a read that falls short is no piece of this file.
      if (this.hashed !== next.end) throw new Error(`The file ended at byte ${this.hashed}, in a piece that ends at ${next.end}.`);
    }
  }
}

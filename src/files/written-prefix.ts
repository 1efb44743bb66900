import { addSpan, frontOf, type Span } from './spans.ts';

// How far a file is whole from its first byte, as its writers report the spans they wrote (in any
// order, over several connections): what may be read of it in order while the rest arrives.

export class WrittenPrefix {
  private spans: Span[] = [];
  private readonly listeners: Array<(end: number) => void> = [];
  /** Bytes [0, end) are on the disk. */
  end = 0;

  /** Bytes [from, to) are written. */
  landed(from: number, to: number): void {
    this.spans = addSpan(this.spans, from, to);
    const end = frontOf(this.spans);
    if (end <= this.end) return;
    this.end = end;
    for (const listener of this.listeners) listener(end);
  }

  /** Calls `listener` with the new end whenever the prefix grows (and at once, when it is not empty). */
  follow(listener: (end: number) => void): void {
    this.listeners.push(listener);
    if (this.end > 0) listener(this.end);
  }
}

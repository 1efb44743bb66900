import { addSpan, type Span } from './spans.ts';

// How far a file is whole from its first byte, as its writers report the spans they wrote (in any
// order, over several connections): what may be read of it in order while the rest arrives.

export class WrittenPrefix {
  private spans: Span[];
  private readonly listeners: Array<(end: number) => void> = [];
  /** Bytes [0, end) are on the disk. */
  end = 0;

  /** `kept`: what is whole already (an earlier attempt's spans). */
  constructor(kept: readonly Span[] = []) {
    this.spans = [...kept];
    this.end = this.spans[0]?.start === 0 ? this.spans[0].end : 0;
  }

  /** Bytes [from, to) are written. */
  landed(from: number, to: number): void {
    this.spans = addSpan(this.spans, from, to);
    const front = this.spans[0]!;
    if (front.start !== 0 || front.end <= this.end) return;
    this.end = front.end;
    for (const listener of this.listeners) listener(this.end);
  }

  /** Calls `listener` with the new end whenever the prefix grows (and at once, when it is not empty). */
  follow(listener: (end: number) => void): void {
    this.listeners.push(listener);
    if (this.end > 0) listener(this.end);
  }
}

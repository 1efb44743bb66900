// A segment that takes far longer than its siblings is asked for a second time, and the first
// answer wins: one request stuck behind a slow server thread or a lost packet then costs about a
// segment's time instead of holding the whole download until the idle timeout. Bounded: only
// once the pool has a typical time to compare with, at most one second request per segment, and
// at most a few per download.

/** Pieces that must have finished before one counts as slow. */
const MIN_SAMPLES = 4;
/** How many times the typical piece's time a piece may take before it gets a second request. */
const SLOW_FACTOR = 4;
/** Never sooner than this: on a fast source, scheduling jitter alone would look slow. */
const MIN_DELAY_MS = 500;
/** How often a running piece is held against the typical time, which the first pieces lack when they start. */
const CHECK_MS = 100;
/** The latest piece times the typical one is taken from. */
const WINDOW = 64;
/** Second requests one download may make: at least MIN_BUDGET, else this share of its pieces. */
const BUDGET_SHARE = 0.05;
const MIN_BUDGET = 2;

export class Hedger {
  /** Second requests made. */
  hedged = 0;
  private readonly durations: number[] = [];
  private readonly budget: number;

  constructor(pieces: number) {
    this.budget = Math.max(MIN_BUDGET, Math.ceil(pieces * BUDGET_SHARE));
  }

  /**
   * Runs `fetch`, and a second copy when the first is slow; resolves with the first to succeed,
   * after stopping the other.
   */
  async run<T>(fetch: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
    const started = Date.now();
    const controllers = [new AbortController()];
    const copies = [fetch(AbortSignal.any([signal, controllers[0]!.signal]))];
    let timer: NodeJS.Timeout | undefined;
    const slow = await Promise.race([
      copies[0]!.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setInterval(() => {
          const delay = this.delayMs();
          if (delay !== null && Date.now() - started >= delay) resolve(true);
        }, CHECK_MS);
      }),
    ]);
    clearInterval(timer);
    if (slow && !signal.aborted && this.hedged < this.budget) {
      this.hedged += 1;
      controllers.push(new AbortController());
      copies.push(fetch(AbortSignal.any([signal, controllers[1]!.signal])));
    }
    try {
      const result = await Promise.any(copies);
      this.durations.push(Date.now() - started);
      if (this.durations.length > WINDOW) this.durations.shift();
      return result;
    } catch (error) {
      // Every copy failed: the first one's reason is the piece's.
      throw (error as AggregateError).errors[0];
    } finally {
      for (const controller of controllers) controller.abort(new Error('another request for this piece answered first'));
      for (const copy of copies) copy.catch(() => {});
    }
  }

  /** How long a piece may take before it gets a second request; null while there is nothing to compare with yet, or no budget left. */
  private delayMs(): number | null {
    if (this.durations.length < MIN_SAMPLES || this.hedged >= this.budget) return null;
    const sorted = [...this.durations].sort((a, b) => a - b);
    const typical = sorted[Math.floor(sorted.length / 2)]!;
    return Math.max(MIN_DELAY_MS, typical * SLOW_FACTOR);
  }
}

import { DownloadError } from '../core/errors.ts';

/** The slowest a source may send: at least `bytesPerSecond` over every window of `windowMs` (0: no floor). */
export type MinSpeed = { bytesPerSecond: number; windowMs: number };

/**
 * Holds a stream of bytes to a floor on its speed. The idle timeout alone lets a source that sends
 * a byte now and then hold a worker for hours; this fails it as source_timeout at the end of the
 * first window that brought too little.
 */
export class SpeedFloor {
  private windowStart = Date.now();
  private windowBytes = 0;

  constructor(private readonly floor: MinSpeed) {}

  arrived(bytes: number): void {
    const { bytesPerSecond, windowMs } = this.floor;
    this.windowBytes += bytes;
    const elapsed = Date.now() - this.windowStart;
    if (bytesPerSecond === 0 || elapsed < windowMs) return;
    if (this.windowBytes * 1000 < bytesPerSecond * elapsed) {
      throw new DownloadError(
        'source_timeout',
        `The source sent ${this.windowBytes} bytes in ${Math.round(elapsed / 1000)} s, slower than the ${bytesPerSecond} bytes a second this server waits for.`,
        true,
      );
    }
    this.windowStart = Date.now();
    this.windowBytes = 0;
  }
}

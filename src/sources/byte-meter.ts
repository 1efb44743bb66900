import { DownloadError } from '../core/errors.ts';
import type { SourceContext } from './types.ts';

/**
 * Bytes of a download (a file, or every track of a stream) as they arrive: reported as progress,
 * held against MAX_FILE_BYTES and against the slowest speed allowed. Bytes read only to be thrown
 * away (what a source sends before a range it did not honour) are not progress, but they are held
 * against the limit all the same: otherwise a source could make the service read without end.
 */
export class ByteMeter {
  private downloaded: number;
  private discarded = 0;
  private windowStart = Date.now();
  private windowBytes = 0;

  constructor(
    private readonly ctx: Pick<SourceContext, 'progress' | 'maxFileBytes' | 'minSpeed'>,
    private readonly total: number | null,
    alreadyDone: number,
  ) {
    this.downloaded = alreadyDone;
    ctx.progress(this.downloaded, total);
  }

  get bytes(): number {
    return this.downloaded;
  }

  add(bytes: number): void {
    this.downloaded += bytes;
    this.check(bytes);
    this.ctx.progress(this.downloaded, this.total);
  }

  /** Bytes read and thrown away; unlike `add`, a retry does not take them back. */
  discard(bytes: number): void {
    this.discarded += bytes;
    this.check(bytes);
  }

  private check(arrived: number): void {
    if (this.downloaded + this.discarded > this.ctx.maxFileBytes) throw tooLarge(this.ctx.maxFileBytes);
    const { bytesPerSecond, windowMs } = this.ctx.minSpeed;
    this.windowBytes += arrived;
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

  /** Takes back the bytes of a failed attempt, which its retry will count again. */
  remove(bytes: number): void {
    this.downloaded -= bytes;
    this.ctx.progress(this.downloaded, this.total);
  }
}

export function tooLarge(maxFileBytes: number, size?: number): DownloadError {
  const what = size === undefined ? 'The download is larger than' : `The download has ${size} bytes, over`;
  return new DownloadError('source_too_large', `${what} the limit of ${maxFileBytes} bytes.`);
}

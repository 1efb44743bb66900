import { DownloadError } from '../core/errors.ts';
import type { SourceContext } from './types.ts';

/**
 * Bytes of a download (a file, or every track of a stream) as they arrive: reported as progress
 * and held against MAX_FILE_BYTES. Bytes read only to be thrown away (what a source sends before a
 * range it did not honour) are not progress, but they are held against the limit all the same:
 * otherwise a source could make the service read without end.
 */
export class ByteMeter {
  private downloaded: number;
  private discarded = 0;

  constructor(
    private readonly ctx: Pick<SourceContext, 'progress' | 'maxFileBytes'>,
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
    this.check();
    this.ctx.progress(this.downloaded, this.total);
  }

  /** Bytes read and thrown away; unlike `add`, a retry does not take them back. */
  discard(bytes: number): void {
    this.discarded += bytes;
    this.check();
  }

  private check(): void {
    if (this.downloaded + this.discarded > this.ctx.maxFileBytes) throw tooLarge(this.ctx.maxFileBytes);
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

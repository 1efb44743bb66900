import { DownloadError } from '../downloads/errors.ts';
import type { SourceContext } from './types.ts';

/**
 * Bytes of a download (a file, or every track of a stream) as they arrive: reported as progress
 * and held against MAX_FILE_BYTES.
 */
export class ByteMeter {
  private downloaded: number;

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
    if (this.downloaded > this.ctx.maxFileBytes) throw tooLarge(this.ctx.maxFileBytes);
    this.ctx.progress(this.downloaded, this.total);
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

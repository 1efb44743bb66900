import { DownloadError } from '../core/errors.ts';
import type { SourceHttp } from './guarded-client.ts';
import { SpeedFloor } from './speed-floor.ts';

/** What a meter reports to and is held to: the download's progress, its size limit, its client's speed floor. */
export type MeteredDownload = {
  progress(downloadedBytes: number, totalBytes: number | null): void;
  maxFileBytes: number;
  http: Pick<SourceHttp, 'minSpeed'>;
};

/**
 * Bytes of a download (a file, or every track of a stream) as they arrive: reported as progress,
 * held against MAX_FILE_BYTES and against the slowest speed allowed. Bytes read only to be thrown
 * away (what a source sends before a range it did not honour) are not progress, but they are held
 * against the limit all the same: otherwise a source could make the service read without end.
 */
export class ByteMeter {
  private downloaded: number;
  private discarded = 0;
  private readonly floor: SpeedFloor;

  constructor(
    private readonly ctx: MeteredDownload,
    private readonly total: number | null,
    alreadyDone: number,
  ) {
    this.downloaded = alreadyDone;
    // The whole download is held to the floor, whatever responses its bytes come in.
    this.floor = new SpeedFloor(ctx.http.minSpeed);
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
    this.floor.arrived(arrived);
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

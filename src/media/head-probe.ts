import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { failed, LEVELLED_LOG, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { indexAhead, MAX_INDEX_BYTES } from './mp4-index.ts';
import { infoOfRun, type MediaInfo } from './probe.ts';

// The probe of a file taken off the end of its download: an MP4-family file whose index comes
// before its media (a fast-start file) is probed while the rest of it arrives, by ffmpeg reading
// its first bytes from a pipe. ffmpeg reads nothing else of such a file to describe it, and says
// the same of it as of the whole file but for the overall bit rate, which the service does not use.
// Any other file, or one ffmpeg cannot describe from its head, is probed whole once it is there.

/** ffmpeg reads a few hundred KB past the index; one still reading after this is probed whole. */
const MAX_FED_BYTES = MAX_INDEX_BYTES + 16 * 1024 * 1024;
const FEED_BYTES = 256 * 1024;

export class HeadProbe {
  /** Bytes [0, whole) of the file are written. */
  private whole = 0;
  private complete = false;
  private deciding: Promise<void> | null = null;
  private decided: boolean | null = null;
  private running: Promise<MediaInfo | null> | null = null;
  private wake: (() => void) | null = null;
  /** ffmpeg was still reading when MAX_FED_BYTES had gone in. */
  private overfed = false;
  private readonly stop = new AbortController();

  constructor(
    private readonly ffmpeg: string,
    private readonly file: string,
    signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => this.stop.abort(signal.reason), { once: true, signal: this.stop.signal });
    this.stop.signal.addEventListener('abort', () => this.woken(), { once: true });
  }

  /** The file is whole up to `end`. */
  grew(end: number): void {
    if (this.stop.signal.aborted) return;
    this.whole = end;
    this.woken();
    if (this.decided === null && !this.deciding) this.deciding = this.decide();
  }

  /**
   * The file is all there: what ffmpeg said of it from its head, or null when it is to be probed
   * whole (not such a file, or its head did not tell).
   */
  async result(): Promise<MediaInfo | null> {
    if (this.stop.signal.aborted) return null;
    this.complete = true;
    this.woken();
    await this.deciding;
    if (this.decided === null && this.whole > 0) await this.decide();
    const info = await (this.running ?? Promise.resolve(null));
    this.stop.abort(new Error('The head probe is over.'));
    return info;
  }

  /** Stops ffmpeg, if it runs: the download failed. */
  cancel(): void {
    this.stop.abort(new Error('The download stopped.'));
  }

  private async decide(): Promise<void> {
    try {
      const ahead = await indexAhead(this.file, this.whole);
      if (ahead === null && !this.complete) return;
      this.decided = ahead === true;
      if (this.decided) this.running = this.run().catch(() => null);
    } catch {
      this.decided = false;
    } finally {
      this.deciding = null;
      // The file grew while its boxes were read.
      if (this.decided === null && !this.complete) this.grew(this.whole);
    }
  }

  private woken(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async run(): Promise<MediaInfo | null> {
    const args = [...LEVELLED_LOG, '-protocol_whitelist', 'pipe', '-f', 'mov', '-i', 'pipe:0'];
    const run = await runFfmpeg(this.ffmpeg, args, { timeLimitMs: timeLimitMs(MAX_FED_BYTES) }, this.stop.signal, (stdin) => this.feed(stdin));
    // What it said with a complaint, or after less than it wanted, is left to the probe of the whole file.
    return this.overfed || failed(run.stderr) ? null : infoOfRun(run.stderr);
  }

  /** The file's bytes in order into ffmpeg, as they are written, until it has read enough or the file ends. */
  private async feed(stdin: Writable): Promise<void> {
    const handle = await open(this.file, 'r');
    try {
      for (let fed = 0; !stdin.destroyed && !this.stop.signal.aborted;) {
        if (fed >= MAX_FED_BYTES) {
          this.overfed = true;
          break;
        }
        if (fed >= this.whole) {
          if (this.complete) break;
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(FEED_BYTES), 0, Math.min(FEED_BYTES, this.whole - fed), fed);
        if (bytesRead === 0) break;
        fed += bytesRead;
        if (!stdin.write(buffer.subarray(0, bytesRead))) await new Promise((resolve) => stdin.once('drain', resolve).once('close', resolve));
      }
    } finally {
      await handle.close();
      stdin.end();
    }
  }
}

import type { BenchMedia } from './media.ts';
import type { Server } from './processes.ts';

/** What every scenario gets from the run. */
export type Bench = {
  /** A directory of this run only, removed at its end; outputs and logs go here. */
  runDir: string;
  progress(message: string): void;
  /** The ffmpeg the service uses (FFMPEG_PATH, else PATH, else the bundled one). */
  ffmpeg: string;
  media: BenchMedia;
  /** Optional tools, found on PATH at run time. */
  tools: { curl: string | null; nginx: string | null; ytDlp: string | null; aria2c: string | null };
  /** Writes dirty pages out, so that a timed run does not pay for the writes of the one before. */
  settle(): Promise<void>;
  /** Starts a server whose life is the run's: stopped at the end, also when the run fails. */
  keep<S extends Server>(starting: Promise<S>): Promise<S>;
};

import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { childEnvironment } from '../core/child-env.ts';
import { DownloadError } from '../core/errors.ts';
import { findExecutable, isExecutable } from '../core/executables.ts';
import { fileUrl } from './input.ts';

// Finding the ffmpeg binary and running it. There is no ffprobe alongside the bundled static
// build, so everything ffmpeg tells us is read from its stderr.

const resolved = new Map<string | undefined, Promise<string>>();

async function locate(configured: string | undefined): Promise<string> {
  if (configured) {
    // A wrong explicit setting must fail loudly rather than silently run another binary.
    if (!isExecutable(configured))
      throw new Error(`FFMPEG_PATH=${configured} is not an executable file; set FFMPEG_PATH to ffmpeg's path, or unset it to use the ffmpeg on PATH.`);
    return configured;
  }
  // A system ffmpeg is newer than the bundled 2018 build, so it wins when there is one.
  const onPath = findExecutable(['ffmpeg']);
  if (onPath) return onPath;
  const installer = await import('@ffmpeg-installer/ffmpeg');
  const bundled = installer.default.path;
  if (!isExecutable(bundled))
    throw new Error(`No ffmpeg found: none is on PATH and ${bundled} is not executable; install ffmpeg, or set FFMPEG_PATH to its path.`);
  return bundled;
}

/** FFMPEG_PATH when configured, else `ffmpeg` on PATH, else the binary of @ffmpeg-installer/ffmpeg. */
export function resolveFfmpegPath(configured: string | undefined): Promise<string> {
  let found = resolved.get(configured);
  if (!found) {
    found = locate(configured);
    resolved.set(configured, found);
    // A failure is not remembered: the binary may be installed before the next try.
    found.catch(() => resolved.delete(configured));
  }
  return found;
}

export type FfmpegRun = { exitCode: number | null; stderr: string };

export type FfmpegLimits = {
  /** ffmpeg is killed after this long (see `timeLimitMs`). */
  timeLimitMs: number;
  /** ffmpeg is killed once `file` has grown past `maxBytes`. */
  output?: { file: string; maxBytes: number };
};

// A copy (`-c copy`, never a decode) costs ffmpeg a read and a write of every byte, and
// +faststart one more pass over the output: 10 MiB/s is far below any disk the service runs on,
// and the first minute covers starting, probing and finishing. So an honest run ends well
// inside the limit, whatever its size, while a run that input made spin or stall (no demuxer
// should, but there are many of them) frees its worker long before DOWNLOAD_TIMEOUT_SECONDS.
const BASE_TIME_MS = 60_000;
const BYTES_PER_SECOND = 10 * 1024 * 1024;

/** How long ffmpeg may work on `inputBytes` of input. */
export function timeLimitMs(inputBytes: number): number {
  return BASE_TIME_MS + Math.ceil(inputBytes / BYTES_PER_SECOND) * 1000;
}

// `-fs` is what stops ffmpeg at the limit; the watch is for what `-fs` lets through (it is checked
// between packets and not while the trailer, which an input can make large, is written), so it
// need only be frequent enough that ffmpeg cannot write much past the limit between two looks.
const WATCH_INTERVAL_MS = 50;

// The head holds what `-i` prints about the input, the tail holds the error that ended the run;
// the middle (per-frame noise of a long run) is not needed and must not grow without bound.
const STDERR_HEAD = 256 * 1024;
const STDERR_TAIL = 64 * 1024;

/**
 * Runs ffmpeg to its end and returns its stderr. It is killed, and the run rejects, when `signal`
 * aborts (with its reason), when it outlives `limits.timeLimitMs` (processing_failed), and when
 * `limits.output` grows past its bound (source_too_large).
 */
export function runFfmpeg(
  ffmpeg: string,
  args: string[],
  limits: FfmpegLimits,
  signal?: AbortSignal,
  /** Writes ffmpeg's input into its stdin (`-i pipe:0`), and ends it. */
  feed?: (stdin: Writable) => Promise<void>,
): Promise<FfmpegRun> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    // In a process group of its own, like the embedded database: Ctrl-C in a terminal must not end
    // ffmpeg (and fail the download) before the service has checkpointed and stopped it itself.
    const child = spawn(ffmpeg, ['-nostdin', '-hide_banner', ...args], {
      stdio: [feed ? 'pipe' : 'ignore', 'ignore', 'pipe'],
      detached: true,
      env: childEnvironment(),
    });
    if (feed && child.stdin) {
      // ffmpeg stops reading once it has what it wants: the pipe's end is no failure of the run.
      child.stdin.on('error', () => {});
      feed(child.stdin).catch(() => child.stdin?.destroy());
    }
    let stoppedBy: unknown;
    const stop = (reason: unknown) => {
      stoppedBy ??= reason;
      child.kill('SIGKILL');
    };
    const onAbort = () => stop(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () =>
        stop(new DownloadError('processing_failed', `ffmpeg was stopped after ${limits.timeLimitMs / 1000} s, longer than an input of this size may take.`)),
      limits.timeLimitMs,
    );
    const { output } = limits;
    const watch =
      output &&
      setInterval(() => {
        void stat(output.file).then(
          (stats) => {
            if (stats.size > output.maxBytes)
              stop(new DownloadError('source_too_large', `The file ffmpeg was writing grew past the limit of ${output.maxBytes} bytes.`));
          },
          () => {}, // not created yet
        );
      }, WATCH_INTERVAL_MS);
    const settle = () => {
      clearTimeout(timer);
      clearInterval(watch);
      signal?.removeEventListener('abort', onAbort);
    };

    let head = '';
    let tail = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      const room = STDERR_HEAD - head.length;
      head += chunk.slice(0, Math.max(0, room));
      if (chunk.length > room) tail = (tail + chunk.slice(Math.max(0, room))).slice(-STDERR_TAIL);
    });
    child.on('error', (error) => {
      settle();
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort's reason goes on as it came, for the caller to recognise.
      reject(stoppedBy ?? error);
    });
    child.on('close', (exitCode) => {
      settle();
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- as above.
      if (stoppedBy !== undefined) reject(stoppedBy);
      else resolve({ exitCode, stderr: tail ? `${head}\n${tail}` : head });
    });
  });
}

// Lines ffmpeg prints after the real error, which say only that something failed.
const GENERIC = [
  /^Conversion failed!?$/,
  /^Could not write header\b/,
  /^Error initializing output stream/,
  /^Error opening output files?\b/,
  /^At least one output file must be specified$/,
  /^Exiting normally/,
];

/** What `-loglevel level+info` makes ffmpeg print: its report on the files, the warnings and errors, each line tagged with its level. */
export const LEVELLED_LOG = ['-nostats', '-loglevel', 'level+info'];

// `[mp4 @ 0x55f7b58bc600] [error] Could not find tag…`: the context, then the level where it was asked for.
const LINE = /^(?:\[[^\]]+ @ 0x[0-9a-f]+\]\s*)?(?:\[(panic|fatal|error|warning|info|verbose|debug|trace)\] ?)?/i;
const FAILURES = new Set(['panic', 'fatal', 'error']);

/** ffmpeg's stderr line by line: each line's level (null where it printed none) and its text, without the level or a `[muxer @ 0x…]` prefix. */
export function logLines(stderr: string): Array<{ level: string | null; text: string }> {
  return stderr.split(/\r?\n/).map((line) => {
    const prefix = LINE.exec(line)!;
    return { level: prefix[1]?.toLowerCase() ?? null, text: line.slice(prefix[0].length) };
  });
}

/** Whether ffmpeg complained of an error as it ran (of its lines tagged with a level, see `LEVELLED_LOG`). */
export function failed(stderr: string): boolean {
  return logLines(stderr).some((line) => FAILURES.has(line.level ?? '') && !generic(line.text));
}

/** A line that says only that something failed, not what. */
function generic(text: string): boolean {
  return GENERIC.some((pattern) => pattern.test(text));
}

/**
 * The last line of ffmpeg's stderr that says what went wrong (of its errors, where it tagged each
 * line's level), with `files` reduced to their base names: the message reaches API clients, which
 * have no business knowing the server's directories.
 */
export function failureLine(stderr: string, files: string[]): string {
  const all = logLines(stderr);
  const levelled = all.some((line) => line.level !== null);
  const lines = all
    .filter((line) => !levelled || FAILURES.has(line.level ?? ''))
    .map(({ text }) => files.reduce((line, file) => line.replaceAll(fileUrl(file), path.basename(file)).replaceAll(file, path.basename(file)), text).trim())
    .filter(Boolean);
  const meaningful = lines.filter((line) => !generic(line));
  return meaningful.at(-1) ?? lines.at(-1) ?? 'ffmpeg failed without a message.';
}

import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

// Finding the ffmpeg binary and running it. There is no ffprobe alongside the bundled static
// build, so everything ffmpeg tells us is read from its stderr.

const resolved = new Map<string | undefined, Promise<string>>();

async function isExecutable(file: string): Promise<boolean> {
  return access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function locate(configured: string | undefined): Promise<string> {
  if (configured) {
    // A wrong explicit setting must fail loudly rather than silently run another binary.
    if (!(await isExecutable(configured))) throw new Error(`FFMPEG_PATH=${configured} is not an executable file.`);
    return configured;
  }
  // A system ffmpeg is newer than the bundled 2018 build, so it wins when there is one.
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, 'ffmpeg');
    if (await isExecutable(candidate)) return candidate;
  }
  const installer = await import('@ffmpeg-installer/ffmpeg');
  const bundled = installer.default.path;
  if (!(await isExecutable(bundled))) throw new Error(`No ffmpeg found: FFMPEG_PATH is unset, none is on PATH, and ${bundled} is not executable.`);
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

// The head holds what `-i` prints about the input, the tail holds the error that ended the run;
// the middle (per-frame noise of a long run) is not needed and must not grow without bound.
const STDERR_HEAD = 256 * 1024;
const STDERR_TAIL = 64 * 1024;

/** Runs ffmpeg to its end and returns its stderr; the process is killed when `signal` aborts. */
export function runFfmpeg(ffmpeg: string, args: string[], signal?: AbortSignal): Promise<FfmpegRun> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const child = spawn(ffmpeg, ['-nostdin', '-hide_banner', ...args], { stdio: ['ignore', 'ignore', 'pipe'], signal, killSignal: 'SIGKILL' });
    let head = '';
    let tail = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      const room = STDERR_HEAD - head.length;
      head += chunk.slice(0, Math.max(0, room));
      if (chunk.length > room) tail = (tail + chunk.slice(Math.max(0, room))).slice(-STDERR_TAIL);
    });
    child.on('error', (error) => {
      if (!signal?.aborted) reject(error);
    });
    child.on('close', (exitCode) => {
      if (signal?.aborted) reject(signal.reason);
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

/**
 * The last line of ffmpeg's stderr that says what went wrong, without its `[muxer @ 0x…]` prefix
 * and with `files` reduced to their base names: the message reaches API clients, which have no
 * business knowing the server's directories.
 */
export function failureLine(stderr: string, files: string[]): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => files.reduce((text, file) => text.replaceAll(file, path.basename(file)), line))
    .map((line) => line.replace(/^\[[^\]]+ @ 0x[0-9a-f]+\]\s*/i, '').trim())
    .filter(Boolean);
  const meaningful = lines.filter((line) => !GENERIC.some((pattern) => pattern.test(line)));
  return meaningful.at(-1) ?? lines.at(-1) ?? 'ffmpeg failed without a message.';
}

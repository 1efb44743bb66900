import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

// Same order as the service: an explicit FFMPEG_PATH wins, then a system ffmpeg (newer than the
// bundled one when installed), then the static binary shipped in @ffmpeg-installer/ffmpeg.

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function resolveFfmpeg(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const explicit = env.FFMPEG_PATH;
  if (explicit) {
    // A wrong explicit setting must fail loudly rather than silently test another binary.
    if (!(await isExecutable(explicit))) throw new Error(`FFMPEG_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, 'ffmpeg');
    if (await isExecutable(candidate)) return candidate;
  }
  const installer = await import('@ffmpeg-installer/ffmpeg');
  const bundled = installer.default.path;
  if (!(await isExecutable(bundled))) {
    throw new Error(`no ffmpeg found: FFMPEG_PATH is unset, none is on PATH, and ${bundled} is not executable`);
  }
  return bundled;
}

const run = promisify(execFile);

/**
 * Runs the test ffmpeg quietly and returns what it wrote to stdout. Its error names the arguments
 * and the folder, because a failed fixture recipe is otherwise hard to tell from the others.
 */
export async function runFfmpeg(args: readonly string[], options: { cwd?: string } = {}): Promise<Buffer> {
  const ffmpeg = await resolveFfmpeg();
  try {
    const { stdout } = await run(ffmpeg, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args], {
      cwd: options.cwd,
      encoding: 'buffer',
      // framemd5 of a long clip or an encode piped to stdout outgrows the 1 MiB default.
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const { stderr, code, signal } = error as { stderr?: Buffer; code?: number | string; signal?: string };
    const where = options.cwd ? ` (in ${options.cwd})` : '';
    const output = stderr?.toString('utf8').trim() || String(error);
    throw new Error(`${ffmpeg} ${args.join(' ')}${where} failed with ${code ?? signal}:\n${output}`, { cause: error });
  }
}

/**
 * The md5 of every decoded frame of a file's first video or audio stream, in presentation order and
 * without timestamps: two files hold the same pictures (or sound) exactly when these lists are
 * equal, whatever container and timestamps each one has.
 */
export async function frameHashes(file: string, kind: 'v' | 'a' = 'v'): Promise<string[]> {
  const stdout = await runFfmpeg(['-i', file, '-map', `0:${kind}:0`, '-f', 'framemd5', '-']);
  return stdout
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    .map((line) => line.split(',').at(-1)!.trim());
}

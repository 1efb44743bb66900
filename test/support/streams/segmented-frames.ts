import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The md5 of every decoded frame of a file's first video or audio stream, without timestamps:
 * two files hold the same pictures (or sound) exactly when these lists are equal, whatever
 * container and timestamps each one has.
 */
export async function frameHashes(ffmpeg: string, file: string, kind: 'v' | 'a'): Promise<string[]> {
  const { stdout } = await run(ffmpeg, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-i', file, '-map', `0:${kind}:0`, '-f', 'framemd5', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    .map((line) => line.split(',').at(-1)!.trim());
}

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../ffmpeg.ts';

const exec = promisify(execFile);

/** Runs the test ffmpeg quietly and returns what it wrote to stdout; its errors name the arguments. */
export async function ffmpeg(args: readonly string[]): Promise<string> {
  const binary = await resolveFfmpeg();
  try {
    const { stdout } = await exec(binary, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args], { maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    throw new Error(`ffmpeg ${args.join(' ')} failed:\n${(error as { stderr?: string }).stderr ?? String(error)}`);
  }
}

/**
 * The md5 of every decoded frame of the first video stream, in presentation order. Two files
 * with the same list show the same pictures in the same order, whatever their container or
 * timestamps, which is what a complete and ordered segment plan must reproduce.
 */
export async function videoFrameHashes(file: string): Promise<string[]> {
  const lines = (await ffmpeg(['-i', file, '-map', '0:v:0', '-f', 'framemd5', '-'])).split('\n');
  return lines.filter((line) => line && !line.startsWith('#')).map((line) => line.split(',').at(-1)?.trim() ?? '');
}

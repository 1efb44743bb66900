import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolveFfmpegPath } from '../../src/media/ffmpeg.ts';

/** The ffmpeg the service would use here (FFMPEG_PATH, then PATH, then the bundled binary). */
export function resolveFfmpeg(): Promise<string> {
  return resolveFfmpegPath(process.env.FFMPEG_PATH || undefined);
}

const run = promisify(execFile);

/** The ffmpeg of @ffmpeg-installer, for media that other builds cannot encode (AMR-NB: Debian's has no encoder for it). */
export async function bundledFfmpeg(): Promise<string> {
  return (await import('@ffmpeg-installer/ffmpeg')).default.path;
}

/**
 * Runs the test ffmpeg quietly and returns what it wrote to stdout. Its error names the arguments
 * and the folder, because a failed fixture recipe is otherwise hard to tell from the others.
 */
export async function runFfmpeg(args: readonly string[], options: { cwd?: string; ffmpeg?: string } = {}): Promise<Buffer> {
  const ffmpeg = options.ffmpeg ?? (await resolveFfmpeg());
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

export type Streams = { video: { start: number; firstKey: boolean }; audio: { start: number } };

/** What ffprobe says of the first video and audio streams: where each starts, and whether the first video packet is a keyframe. */
export async function streamsOf(file: string): Promise<Streams> {
  const startOf = async (kind: 'v' | 'a') => {
    const text = (await runFfmpeg(['-i', file, '-map', `0:${kind}:0`, '-c', 'copy', '-f', 'framemd5', '-'])).toString('utf8');
    const first = text.split('\n').find((line) => line.trim() && !line.startsWith('#'))!;
    // framemd5: stream, dts, pts, duration, size, hash; timestamps in the stream's time base, given in the header.
    const base = /#tb 0: (\d+)\/(\d+)/.exec(text)!;
    const [, , pts] = first.split(',').map((field) => field.trim());
    return (Number(pts) * Number(base[1])) / Number(base[2]);
  };
  const keyOf = async () => {
    // Only keyframes: its first one is the stream's first packet exactly when the stream starts at one.
    const all = (await runFfmpeg(['-i', file, '-map', '0:v:0', '-c', 'copy', '-f', 'framemd5', '-'])).toString('utf8');
    const keys = (await runFfmpeg(['-i', file, '-map', '0:v:0', '-c', 'copy', '-bsf:v', 'noise=drop=not(key)', '-f', 'framemd5', '-'])).toString('utf8');
    const firstLine = (text: string) =>
      text
        .split('\n')
        .find((line) => line.trim() && !line.startsWith('#'))!
        .split(',')
        .at(-1)!
        .trim();
    return firstLine(all) === firstLine(keys);
  };
  return { video: { start: await startOf('v'), firstKey: await keyOf() }, audio: { start: await startOf('a') } };
}

/** What ffmpeg complains of as it decodes every stream of a file: nothing for a file that decodes cleanly. */
export async function decodeErrors(file: string): Promise<string> {
  const { stderr } = await run(await resolveFfmpeg(), ['-nostdin', '-hide_banner', '-v', 'error', '-i', file, '-map', '0', '-f', 'null', '-'], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  return stderr;
}

/** Subtitle stream `index` of a file, as WebVTT text. */
export async function subtitleText(file: string, index: number, options: { ffmpeg?: string } = {}): Promise<string> {
  return (await runFfmpeg(['-i', file, '-map', `0:s:${index}`, '-f', 'webvtt', '-'], options)).toString('utf8');
}

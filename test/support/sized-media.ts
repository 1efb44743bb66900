import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, rename, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { bundledFfmpeg, resolveFfmpeg, runFfmpeg } from './ffmpeg.ts';
import { MEDIA_DIR_ENV, publishedEnv } from './published-env.ts';

// Playable MP4s of the sizes that matter to a source fetch: below, exactly at and above 64 KiB
// (where one socket read, one stream buffer or one peek ends), tens of MB, and the clip the
// README's walk-through makes. Each is a real clip made by ffmpeg; the exact sizes are reached with
// a top-level `free` box after the media, which every player skips. Made once per ffmpeg and
// recipe version, in a folder of the media dir the global setup provides (as media-cache.ts does).

const h264Aac = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '64k', '-movflags', '+faststart'];
const clip = (size: string, seconds: number) => [
  ...['-f', 'lavfi', '-i', `testsrc=size=${size}:rate=25:duration=${seconds}`],
  ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=44100:duration=${seconds}`],
  ...h264Aac,
];

type Recipe = {
  args: readonly string[];
  /** The file is padded to exactly this many bytes. */
  bytes?: number;
  /** Or at least this many, as ffmpeg made it. */
  minBytes?: number;
  /** README: the ffmpeg the README names (the bundled one), not the test ffmpeg. */
  bundled?: boolean;
};

const recipes = {
  // The README's command, word for word: 640x360 testsrc and a sine, 5 s, faststart (about 78 KB).
  'readme-clip.mp4': {
    args: [
      ...['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440'],
      ...['-t', '5', '-c:v', 'libx264', '-c:a', 'aac', '-movflags', '+faststart'],
    ],
    minBytes: 40_000,
    bundled: true,
  },
  'below-64k.mp4': { args: clip('160x120', 1), bytes: 30_000 },
  'at-64k.mp4': { args: clip('320x240', 2), bytes: 65_536 },
  'above-64k.mp4': { args: clip('320x240', 3), bytes: 100_000 },
  // Another picture and tone, padded to the same size: a file that changed between two requests.
  'above-64k-changed.mp4': {
    args: [
      ...['-f', 'lavfi', '-i', 'smptebars=size=320x240:rate=25:duration=3', '-f', 'lavfi', '-i', 'sine=frequency=660:sample_rate=44100:duration=3'],
      ...h264Aac,
    ],
    bytes: 100_000,
  },
  // A few MB: more than the socket buffers of both ends hold.
  'few-mb.mp4': {
    args: [
      ...['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25:duration=4', '-f', 'lavfi', '-i', 'sine=frequency=550:sample_rate=44100:duration=4'],
      ...['-vf', 'noise=alls=30:allf=t', '-b:v', '5M', '-maxrate', '5M', '-bufsize', '2M', ...h264Aac],
    ],
    minBytes: 2_000_000,
  },
  // Noise keeps the encoder at its bitrate: about 20 MB of real video and sound.
  'large.mp4': {
    args: [
      ...['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=8', '-f', 'lavfi', '-i', 'sine=frequency=330:sample_rate=44100:duration=8'],
      ...['-vf', 'noise=alls=30:allf=t', '-b:v', '20M', '-maxrate', '20M', '-bufsize', '8M', ...h264Aac],
    ],
    minBytes: 16_000_000,
  },
  // Six parts of an S3 upload (8 MiB each): a worker killed part-way has some of them recorded.
  'six-parts.mp4': { args: clip('320x240', 3), bytes: 48 * 1024 * 1024 },
  // Past the length below which a file from a source of ranges is shared out from its first answer.
  'beyond-split.mp4': { args: clip('320x240', 3), bytes: 260 * 1024 * 1024 },
} as const satisfies Record<string, Recipe>;

export type SizedMediaName = keyof typeof recipes;

/** The direct-file sizes every real-server case downloads (the README clip has tests of its own). */
export const SIZES = ['below-64k.mp4', 'at-64k.mp4', 'above-64k.mp4', 'large.mp4'] as const satisfies readonly SizedMediaName[];

/** Appends a `free` box that brings `file` to exactly `bytes`. */
async function padTo(file: string, bytes: number): Promise<void> {
  const size = (await stat(file)).size;
  const gap = bytes - size;
  if (gap === 0) return;
  if (gap < 8) throw new Error(`${file} came out at ${size} bytes, too close to or above the ${bytes} it must be padded to`);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(gap, 0);
  head.write('free', 4, 'latin1');
  await appendFile(file, head);
  // Zeros to the end, without holding them all in memory.
  await truncate(file, bytes);
}

async function make(dir: string, name: SizedMediaName): Promise<void> {
  const target = path.join(dir, name);
  if (existsSync(target)) return;
  const recipe: Recipe = recipes[name];
  const partial = path.join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.part`);
  try {
    await runFfmpeg([...recipe.args, '-f', 'mp4', partial], recipe.bundled ? { ffmpeg: await bundledFfmpeg() } : {});
    if (recipe.bytes !== undefined) await padTo(partial, recipe.bytes);
    const size = (await stat(partial)).size;
    if (size < (recipe.minBytes ?? 0)) throw new Error(`${name} came out at ${size} bytes, expected at least ${recipe.minBytes}`);
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
}

let made: Promise<Record<SizedMediaName, string>> | undefined;

async function makeAll(): Promise<Record<SizedMediaName, string>> {
  const key = createHash('sha256')
    .update(JSON.stringify({ ffmpeg: await resolveFfmpeg(), bundled: await bundledFfmpeg(), recipes }))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(publishedEnv(MEDIA_DIR_ENV), `sized-${key}`);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const names = Object.keys(recipes) as SizedMediaName[];
  await Promise.all(names.map((name) => make(dir, name)));
  return Object.fromEntries(names.map((name) => [name, path.join(dir, name)])) as Record<SizedMediaName, string>;
}

/** Every sized file, by name, made on first use and reused by later runs. */
export function sizedMedia(): Promise<Record<SizedMediaName, string>> {
  made ??= makeAll();
  return made;
}

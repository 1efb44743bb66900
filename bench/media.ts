import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { timedRun } from './processes.ts';

// The media the benchmark downloads, made by ffmpeg once and kept in the system temp dir under a
// key of the binary and the recipes below, so that later runs start at once. Big files are one
// short encoded clip repeated with `-c copy`, which costs a copy of the bytes and no encoding.

const CLIP = [
  ...['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=4'],
  ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=4'],
  // Lossless, so that four seconds already weigh about 7 MB.
  ...['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k', '-shortest'],
];
/**
 * The files the direct download is measured with: copies of the clip (about 7 MB each), cut at
 * `seconds` where given. The medium and short ones come from a server that sends 8 MiB/s per
 * connection: about 15 s and 4 s on one connection.
 */
const FILES: Record<string, { copies: number; seconds?: number }> = {
  small: { copies: 4 },
  short: { copies: 5, seconds: 18.3 },
  medium: { copies: 18 },
  big: { copies: 43 },
  huge: { copies: 430 },
};
export const HLS_SEGMENTS = 300;
const HLS = [
  ...['-f', 'lavfi', '-i', `testsrc=size=320x180:rate=10:duration=${HLS_SEGMENTS}`],
  ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=22050:duration=${HLS_SEGMENTS}`],
  // A keyframe every second, so that every one-second segment starts with one.
  ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '10', '-keyint_min', '10', '-sc_threshold', '0'],
  ...['-c:a', 'aac', '-b:a', '32k'],
  ...['-f', 'hls', '-hls_time', '1', '-hls_playlist_type', 'vod', '-hls_segment_filename', 'seg%d.ts'],
];

export type BenchMedia = {
  /** Every file below here is served by the origin. */
  dir: string;
  /** ~300 MB MP4, relative to `dir`. */
  big: string;
  /** ~125 MB and ~32 MB MP4s, for the source that limits each connection's rate. */
  medium: string;
  short: string;
  /** ~30 MB and ~3 GB MP4s, for memory that must not grow with the file. */
  small: string;
  huge: string;
  /** The HLS stream's media playlist, relative to `dir`. */
  hlsPlaylist: string;
};

/** Makes the media with `ffmpeg` (the service's, which the run resolved), or finds it made. */
export async function prepareMedia(ffmpeg: string): Promise<BenchMedia> {
  // Quiet, and overwriting what a killed run left half-made.
  const runFfmpeg = (args: string[], cwd?: string) => timedRun(ffmpeg, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args], cwd);
  const recipes = { CLIP, FILES, HLS };
  const key = createHash('sha256').update(JSON.stringify({ ffmpeg, recipes })).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), `vds-bench-media-${key}`);
  await mkdir(dir, { recursive: true });
  // Served to nginx workers and to the service, whoever they run as.
  await chmod(dir, 0o755);
  await ensure(dir, 'clip.mp4', (out) => runFfmpeg([...CLIP, '-f', 'mp4', out]));
  for (const [name, { copies, seconds }] of Object.entries(FILES)) {
    await ensure(dir, `${name}.mp4`, async (out) => {
      const list = `${out}.txt`;
      await writeFile(list, `file '${path.join(dir, 'clip.mp4')}'\n`.repeat(copies));
      const cut = seconds === undefined ? [] : ['-t', String(seconds)];
      await runFfmpeg(['-f', 'concat', '-safe', '0', '-i', list, ...cut, '-c', 'copy', '-movflags', '+faststart', '-f', 'mp4', out]);
    });
  }
  await ensure(dir, 'hls', async (out) => {
    await mkdir(out);
    await runFfmpeg([...HLS, 'index.m3u8'], out);
    const segments = (await readdir(out)).filter((name) => name.endsWith('.ts')).length;
    if (segments !== HLS_SEGMENTS) throw new Error(`ffmpeg cut the HLS stream into ${segments} segments, not ${HLS_SEGMENTS}`);
  });
  return { dir, big: 'big.mp4', medium: 'medium.mp4', short: 'short.mp4', small: 'small.mp4', huge: 'huge.mp4', hlsPlaylist: 'hls/index.m3u8' };
}

/** Makes `name` in `dir` unless it is there; built aside and renamed, so it is whole when it is there. */
async function ensure(dir: string, name: string, build: (out: string) => Promise<unknown>): Promise<void> {
  const target = path.join(dir, name);
  if (
    await stat(target).then(
      () => true,
      () => false,
    )
  )
    return;
  console.log(`[bench] generating ${name} (once; cached in ${dir})`);
  const building = await mkdtemp(path.join(dir, `.${name}-`));
  try {
    const out = path.join(building, name);
    await build(out);
    await chmod(out, (await stat(out)).isDirectory() ? 0o755 : 0o644);
    await rename(out, target);
  } finally {
    await rm(building, { recursive: true, force: true });
  }
}

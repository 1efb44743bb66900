import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveFfmpeg, runFfmpeg } from '../ffmpeg.ts';

// Media for the segmented-fetch and ffmpeg tests, made once per ffmpeg binary and recipe version
// under the system temp dir (like media-cache.ts): one MPEG-TS source with a keyframe every
// second, cut by ffmpeg's own HLS muxer into plain and AES-128 segments, so every output can be
// compared frame by frame with the source.

/** Part of the cache key: bump it when the recipes below change. */
const RECIPES_VERSION = 2;

export const AES_IV = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex');

export type SegmentedMedia = {
  /** H.264 + AAC in MPEG-TS, 320x240, 25 fps, 6 s. */
  sourceTs: string;
  videoOnlyTs: string;
  /** The source's AAC as ADTS, the way MPEG-TS carries it. */
  audioOnlyAac: string;
  /** VP8 + Vorbis, which MP4 has no place for. */
  vp8Webm: string;
  /** seg000.ts… of the source, in order, each about one second. */
  hlsSegments: string[];
  /** The same cut as fragmented MP4: `fmp4Init` (EXT-X-MAP), then seg000.m4s… */
  fmp4Init: string;
  fmp4Segments: string[];
  /** The same cut, encrypted with AES-128-CBC, `aesKey` and AES_IV. */
  aesSegments: string[];
  aesKey: string;
};

async function segmentsIn(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((name) => /^seg\d{3}\.(ts|m4s)$/.test(name)).sort();
  return names.map((name) => path.join(dir, name));
}

async function generate(dir: string): Promise<void> {
  const source = path.join(dir, 'source.ts');
  await runFfmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25:duration=6'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=6'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-keyint_min', '25', '-sc_threshold', '0'],
    ...['-c:a', 'aac', '-b:a', '64k', '-shortest', '-f', 'mpegts', source],
  ]);
  await runFfmpeg(['-i', source, '-map', '0:v', '-c', 'copy', '-f', 'mpegts', path.join(dir, 'video-only.ts')]);
  await runFfmpeg(['-i', source, '-map', '0:a', '-c', 'copy', '-f', 'adts', path.join(dir, 'audio-only.aac')]);
  await runFfmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=25:duration=1', '-f', 'lavfi', '-i', 'sine=duration=1'],
    ...['-c:v', 'libvpx', '-deadline', 'realtime', '-c:a', 'libvorbis', '-f', 'webm', path.join(dir, 'vp8.webm')],
  ]);

  const hls = (subdir: string, ext = 'ts') => [
    ...['-i', source, '-c', 'copy', '-f', 'hls', '-hls_time', '1', '-hls_list_size', '0'],
    ...['-hls_segment_filename', path.join(dir, subdir, `seg%03d.${ext}`)],
  ];
  await mkdir(path.join(dir, 'hls'));
  await runFfmpeg([...hls('hls'), path.join(dir, 'hls', 'index.m3u8')]);
  await mkdir(path.join(dir, 'fmp4'));
  await runFfmpeg([
    ...hls('fmp4', 'm4s'),
    // The 2018 ffmpeg does not turn ADTS AAC into MP4's form by itself.
    ...['-bsf:a', 'aac_adtstoasc', '-hls_segment_type', 'fmp4', '-hls_fmp4_init_filename', 'init.mp4', path.join(dir, 'fmp4', 'index.m3u8')],
  ]);
  await mkdir(path.join(dir, 'aes'));
  const key = path.join(dir, 'aes', 'key.bin');
  await writeFile(key, randomBytes(16));
  // The key info file: the key's URI as the playlist names it, the key file, the IV.
  const keyInfo = path.join(dir, 'aes', 'key.info');
  await writeFile(keyInfo, `key.bin\n${key}\n${AES_IV.toString('hex')}\n`);
  await runFfmpeg([...hls('aes'), '-hls_key_info_file', keyInfo, path.join(dir, 'aes', 'index.m3u8')]);
}

export async function segmentedMedia(): Promise<SegmentedMedia> {
  const ffmpeg = await resolveFfmpeg();
  const key = createHash('sha256').update(JSON.stringify({ ffmpeg, RECIPES_VERSION })).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), `vds-test-segmented-${key}`);
  if ((await segmentsIn(path.join(dir, 'aes')).catch(() => [])).length === 0) {
    // Made aside and renamed whole, so that a parallel or killed run never leaves half a set.
    const partial = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}.part`;
    await mkdir(partial, { recursive: true });
    try {
      await generate(partial);
      await rename(partial, dir).catch((error: NodeJS.ErrnoException) => {
        // Another test file finished first: its set is as good as ours.
        if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      });
    } finally {
      await rm(partial, { recursive: true, force: true });
    }
  }
  return {
    sourceTs: path.join(dir, 'source.ts'),
    videoOnlyTs: path.join(dir, 'video-only.ts'),
    audioOnlyAac: path.join(dir, 'audio-only.aac'),
    vp8Webm: path.join(dir, 'vp8.webm'),
    hlsSegments: await segmentsIn(path.join(dir, 'hls')),
    fmp4Init: path.join(dir, 'fmp4', 'init.mp4'),
    fmp4Segments: await segmentsIn(path.join(dir, 'fmp4')),
    aesSegments: await segmentsIn(path.join(dir, 'aes')),
    aesKey: path.join(dir, 'aes', 'key.bin'),
  };
}

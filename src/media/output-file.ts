import { rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError, storageFull } from '../core/errors.ts';
import { MATROSKA, MP4, type Container } from './containers.ts';
import { LEVELLED_LOG, runFfmpeg } from './ffmpeg.ts';
import { fileUrl } from './input.ts';
import { writtenInfo, type MediaInfo } from './probe.ts';

// Writing one ffmpeg output (a remux, an audio extraction, a muted copy): aside under a dot-name, bounded in size by `-fs` and the size watch, bounded in time, and
// renamed into place only when whole, so that a file at the output's name is always a finished one.

/** A container to write, with the muxer arguments (`-f` and its options) that write it. */
export type OutputTarget = { container: Container; args: string[] };

// MP4 plays everywhere; Matroska takes any codec, for the streams MP4 has no place for (VP8,
// Theora, PCM, and codecs that ffmpeg only writes to MP4 under -strict experimental).
export const TO_MP4: OutputTarget = { container: MP4, args: ['-movflags', '+faststart', '-f', 'mp4'] };
export const TO_MATROSKA: OutputTarget = { container: MATROSKA, args: ['-f', 'matroska'] };

export type OutputBounds = { timeLimitMs: number; maxBytes: number };

/** A file ffmpeg wrote, and what its run said about it. */
export type RemuxedFile = { path: string; mime: string; ext: string; info: MediaInfo };

export type Written = { ok: true; file: RemuxedFile } | { ok: false; stderr: string; temp: string };

/** How ffmpeg says that a codec has no place in MP4 (or only under -strict experimental). */
export const NOT_IN_MP4 = /codec not currently supported in container|Could not find tag for codec|in MP4 support is experimental/i;

// How ffmpeg reports a write that failed with ENOSPC or EDQUOT.
const NO_ROOM = /No space left on device|Disk quota exceeded/i;

/** `-fs` for a bound of `maxBytes`: one byte over it, so that a file ffmpeg cut short is always over the bound. */
export function sizeLimitArgs(maxBytes: number): string[] {
  return ['-fs', String(maxBytes + 1)];
}

/** Removes what an earlier run may have left at `output` plus each extension, so that it cannot pass for this run's. */
export async function removeOutputs(output: string, exts: Iterable<string>): Promise<void> {
  await Promise.all([...new Set(exts)].map((ext) => rm(`${output}.${ext}`, { force: true })));
}

/** `writeOutput` to MP4, and again to Matroska when ffmpeg says a stream has no place in MP4. */
export async function writeMp4OrMatroska(ffmpeg: string, args: string[], output: string, bounds: OutputBounds, signal: AbortSignal): Promise<Written> {
  const first = await writeOutput(ffmpeg, args, output, TO_MP4, bounds, signal);
  return !first.ok && NOT_IN_MP4.test(first.stderr) ? writeOutput(ffmpeg, args, output, TO_MATROSKA, bounds, signal) : first;
}

/**
 * Runs ffmpeg with `args` (inputs, maps, codecs: everything but the muxer and the output) and
 * writes `output` plus the target container's extension. Resolves `ok: false` with ffmpeg's stderr
 * when ffmpeg fails; throws source_too_large past `bounds.maxBytes`, storage_full when the disk is
 * full, and whatever the run rejects with (time limit, abort). Nothing is left behind but a whole file.
 */
export async function writeOutput(
  ffmpeg: string,
  args: string[],
  output: string,
  target: OutputTarget,
  bounds: OutputBounds,
  signal: AbortSignal,
): Promise<Written> {
  const { container } = target;
  const file = `${output}.${container.ext}`;
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.part`);
  try {
    const limits = { timeLimitMs: bounds.timeLimitMs, output: { file: temp, maxBytes: bounds.maxBytes } };
    // Its report on what it wrote describes the file, so that it need not be probed again.
    const run = await runFfmpeg(ffmpeg, [...LEVELLED_LOG, '-y', ...args, ...target.args, fileUrl(temp)], limits, signal);
    // ffmpeg 5.1 exits 0 when the disk fills as it writes the trailer (or moves the index to the front), leaving a cut file.
    if (NO_ROOM.test(run.stderr)) throw storageFull();
    if (run.exitCode !== 0) return { ok: false, stderr: run.stderr, temp };
    // `-fs` ends ffmpeg as if it had finished, with the file cut where it passed the limit.
    const size = (await stat(temp)).size;
    if (size > bounds.maxBytes) throw new DownloadError('source_too_large', `The file ffmpeg wrote is larger than the limit of ${bounds.maxBytes} bytes.`);
    await rename(temp, file);
    return { ok: true, file: { path: file, mime: container.mime, ext: container.ext, info: writtenInfo(run.stderr) } };
  } finally {
    await rm(temp, { force: true });
  }
}

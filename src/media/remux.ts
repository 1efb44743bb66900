import { rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError, storageFull } from '../core/errors.ts';
import { MATROSKA, MP4, type Container } from './containers.ts';
import { failureLine, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { fileUrl, inputArgs } from './input.ts';
import { probe } from './probe.ts';

export type RemuxedFile = { path: string; mime: string; ext: string };

type Target = { container: Container; args: string[] };

// MP4 plays everywhere; Matroska takes any codec, for the streams MP4 has no place for (VP8,
// Theora, PCM, and codecs that ffmpeg only writes to MP4 under -strict experimental).
const TO_MP4: Target = { container: MP4, args: ['-movflags', '+faststart', '-f', 'mp4'] };
const TO_MATROSKA: Target = { container: MATROSKA, args: ['-f', 'matroska'] };

const NOT_IN_MP4 = /codec not currently supported in container|Could not find tag for codec|in MP4 support is experimental/i;
// How ffmpeg reports a write that failed with ENOSPC or EDQUOT.
const NO_ROOM = /No space left on device|Disk quota exceeded/i;

export type RemuxInput = {
  ffmpeg: string;
  inputs: string[];
  output: string;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
};

/**
 * Copies the video and audio of `inputs` (video from the first, audio from the last when there are
 * several) into one file at `output` plus the extension of the container it chose, without
 * re-encoding. An input that is not in a container of the table is refused (unsupported_source)
 * before ffmpeg runs. On failure nothing is left at the output's place and processing_failed
 * (source_too_large past `maxBytes`, storage_full when the disk is full) is thrown.
 */
export async function remux(input: RemuxInput): Promise<RemuxedFile> {
  const { ffmpeg, inputs, output, maxBytes, signal } = input;
  const last = inputs.length - 1;
  if (last < 0) throw new Error('remux needs at least one input');
  // An output of an earlier run must not pass for this run's when this one fails.
  await Promise.all([TO_MP4, TO_MATROSKA].map((target) => rm(`${output}.${target.container.ext}`, { force: true })));
  const opened = await Promise.all(inputs.map((file) => inputArgs(file, input.declaredType)));
  const lastInput = await probe({ ffmpeg, file: inputs[last]!, signal, declaredType: input.declaredType });
  const args = [
    ...opened.flat(),
    ...['-map', '0:v?', '-map', `${last}:a?`],
    ...['-c', 'copy'],
    // ADTS AAC (as MPEG-TS carries it) must become MP4's form; recent muxers insert this filter
    // by themselves, older builds (and some muxers of the bundled 2018 one) fail without it.
    ...(lastInput.streams.some((stream) => stream.kind === 'audio' && stream.codec === 'aac') ? ['-bsf:a', 'aac_adtstoasc'] : []),
    // One byte over the limit, so that a file ffmpeg cut short is always one over it.
    ...['-fs', String(maxBytes + 1)],
  ];
  const inputBytes = (await Promise.all(inputs.map((file) => stat(file)))).reduce((sum, stats) => sum + stats.size, 0);
  const bounds = { timeLimitMs: timeLimitMs(inputBytes), maxBytes };

  const first = await write(ffmpeg, args, output, TO_MP4, bounds, signal);
  if (first.ok) return first.file;
  const second = NOT_IN_MP4.test(first.stderr) ? await write(ffmpeg, args, output, TO_MATROSKA, bounds, signal) : first;
  if (second.ok) return second.file;
  throw new DownloadError('processing_failed', failureLine(second.stderr, [...inputs, second.temp]));
}

type Written = { ok: true; file: RemuxedFile } | { ok: false; stderr: string; temp: string };

async function write(
  ffmpeg: string,
  args: string[],
  output: string,
  target: Target,
  bounds: { timeLimitMs: number; maxBytes: number },
  signal: AbortSignal,
): Promise<Written> {
  const { container } = target;
  const file = `${output}.${container.ext}`;
  // Written aside and renamed, so that a file at the output's name is always a whole one.
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.part`);
  try {
    const limits = { timeLimitMs: bounds.timeLimitMs, output: { file: temp, maxBytes: bounds.maxBytes } };
    const run = await runFfmpeg(ffmpeg, ['-loglevel', 'error', '-y', ...args, ...target.args, fileUrl(temp)], limits, signal);
    if (run.exitCode !== 0) {
      if (NO_ROOM.test(run.stderr)) throw storageFull();
      return { ok: false, stderr: run.stderr, temp };
    }
    // `-fs` ends ffmpeg as if it had finished, with the file cut where it passed the limit.
    const size = (await stat(temp)).size;
    if (size > bounds.maxBytes) throw new DownloadError('source_too_large', `The remuxed file is larger than the limit of ${bounds.maxBytes} bytes.`);
    await rename(temp, file);
    return { ok: true, file: { path: file, mime: container.mime, ext: container.ext } };
  } finally {
    await rm(temp, { force: true });
  }
}

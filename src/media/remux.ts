import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { seconds } from './cut.ts';
import { failureLine, timeLimitMs } from './ffmpeg.ts';
import { inputArgs, seekingInputArgs } from './input.ts';
import { removeOutputs, sizeLimitArgs, TO_MATROSKA, TO_MP4, writeMp4OrMatroska, type RemuxedFile } from './output-file.ts';

/**
 * A clip cut in the same run, without re-encoding: each input is seeked by its own amount, for
 * inputs that start at different times of the source (separate DASH video and audio whose segment
 * boundaries differ), since ffmpeg places each input by its own start time plus its `-ss`.
 */
export type RemuxCut = {
  /** Per input, in the order of `inputs`: the clip's start minus the source time at which that input starts. */
  seekSeconds: readonly number[];
  /** How long the clip lasts from its start; null to the end. */
  lastsSeconds: number | null;
};

export type RemuxInput = {
  ffmpeg: string;
  inputs: string[];
  output: string;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
  cut?: RemuxCut;
};

/**
 * Copies the video and audio of `inputs` (video from the first, audio from the last when there are
 * several) into one file at `output` plus the extension of the container it chose, without
 * re-encoding, and cut to a clip when `cut` says. An input that is not in a container of the table
 * is refused (unsupported_source) before ffmpeg runs. On failure nothing is left at the output's place and processing_failed
 * (source_too_large past `maxBytes`, storage_full when the disk is full) is thrown.
 */
export async function remux(input: RemuxInput): Promise<RemuxedFile> {
  const { ffmpeg, inputs, output, maxBytes, signal } = input;
  const last = inputs.length - 1;
  if (last < 0) throw new Error('remux needs at least one input');
  // An output of an earlier run must not pass for this run's when this one fails.
  await removeOutputs(output, [TO_MP4.container.ext, TO_MATROSKA.container.ext]);
  const { cut } = input;
  const opened = await Promise.all(
    inputs.map((file, i) => (cut ? seekingInputArgs(file, input.declaredType ?? null, seconds(cut.seekSeconds[i] ?? 0)) : inputArgs(file, input.declaredType))),
  );
  // As cut.ts: each input from its keyframe at or before its seek, and make_zero moves every stream
  // by the same amount so that the file starts at 0 with its streams together.
  const cutArgs = cut ? [...(cut.lastsSeconds === null ? [] : ['-t', seconds(cut.lastsSeconds)]), '-avoid_negative_ts', 'make_zero'] : [];
  // ADTS AAC (as MPEG-TS carries it) must become MP4's form: both ffmpegs the service runs on (a
  // system one, the bundled 2018 build) insert aac_adtstoasc by themselves, so the codec need not
  // be probed beforehand to ask for it (the filter fails on any other codec).
  const args = [...opened.flat(), ...['-map', '0:v?', '-map', `${last}:a?`], ...['-c', 'copy'], ...cutArgs, ...sizeLimitArgs(maxBytes)];
  const inputBytes = (await Promise.all(inputs.map((file) => stat(file)))).reduce((sum, stats) => sum + stats.size, 0);
  const bounds = { timeLimitMs: timeLimitMs(inputBytes), maxBytes };

  const written = await writeMp4OrMatroska(ffmpeg, args, output, bounds, signal);
  if (written.ok) return written.file;
  throw new DownloadError('processing_failed', failureLine(written.stderr, [...inputs, written.temp]));
}

import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { seconds } from './cut.ts';
import { failureLine, timeLimitMs } from './ffmpeg.ts';
import { inputArgs } from './input.ts';
import { removeOutputs, sizeLimitArgs, TO_MATROSKA, TO_MP4, writeMp4OrMatroska, type RemuxedFile } from './output-file.ts';

export type RemuxInput = {
  ffmpeg: string;
  inputs: string[];
  output: string;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
  /**
   * Per input, where it starts on the file's clock (else each starts at 0): the tracks of a clip,
   * whose first segments start at different times of the source, stay together.
   */
  offsetsSeconds?: readonly number[];
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
  await removeOutputs(output, [TO_MP4.container.ext, TO_MATROSKA.container.ext]);
  const opened = await Promise.all(
    inputs.map(async (file, i) => {
      const offset = input.offsetsSeconds?.[i];
      // ffmpeg moves each input to start at 0, then by its -itsoffset.
      return [...(offset ? ['-itsoffset', seconds(offset)] : []), ...(await inputArgs(file, input.declaredType))];
    }),
  );
  // ADTS AAC (as MPEG-TS carries it) must become MP4's form: both ffmpegs the service runs on (a
  // system one, the bundled 2018 build) insert aac_adtstoasc by themselves, so the codec need not
  // be probed beforehand to ask for it (the filter fails on any other codec).
  const args = [...opened.flat(), ...['-map', '0:v?', '-map', `${last}:a?`], ...['-c', 'copy'], ...sizeLimitArgs(maxBytes)];
  const inputBytes = (await Promise.all(inputs.map((file) => stat(file)))).reduce((sum, stats) => sum + stats.size, 0);
  const bounds = { timeLimitMs: timeLimitMs(inputBytes), maxBytes };

  const written = await writeMp4OrMatroska(ffmpeg, args, output, bounds, signal);
  if (written.ok) return written.file;
  throw new DownloadError('processing_failed', failureLine(written.stderr, [...inputs, written.temp]));
}

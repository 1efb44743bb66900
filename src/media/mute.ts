import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { failureLine, timeLimitMs } from './ffmpeg.ts';
import { inputArgs } from './input.ts';
import { removeOutputs, sizeLimitArgs, TO_MATROSKA, TO_MP4, writeMp4OrMatroska, type RemuxedFile } from './output-file.ts';
import { probe } from './probe.ts';

// `mode: "mute"`: the pictures of a file without its sound, copied, never re-encoded. MP4 when
// the video codecs have a place in it, else Matroska, as remux chooses.

// `-map 0:V` (capital) takes the video streams that are not cover pictures; ffmpeg refuses to
// write anything when none is left, in these words.
const NO_VIDEO = /Stream map '0:V' matches no streams/;

function noVideo(): DownloadError {
  return new DownloadError('unsupported_source', 'The source has no video stream, so there is no picture to keep without its sound.');
}

export type MuteInput = {
  ffmpeg: string;
  input: string;
  /** Where to write: this path plus the extension of the container chosen. */
  output: string;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
};

/**
 * Copies the video streams of `input` (not its cover pictures), without audio, subtitles or data,
 * to `output` plus the extension of the container chosen. Refuses an input that is not in a
 * container of the table, or has no video, as unsupported_source. On failure nothing is left at
 * the output's place and processing_failed (source_too_large past `maxBytes`, storage_full when
 * the disk is full) is thrown.
 */
export async function muteVideo(input: MuteInput): Promise<RemuxedFile> {
  const { ffmpeg, output, maxBytes, signal } = input;
  await removeOutputs(output, [TO_MP4.container.ext, TO_MATROSKA.container.ext]);
  const opened = await inputArgs(input.input, input.declaredType);
  const info = await probe({ ffmpeg, file: input.input, signal, declaredType: input.declaredType });
  if (!info.streams.some((stream) => stream.kind === 'video')) throw noVideo();

  const args = [...opened, ...['-map', '0:V', '-an', '-sn', '-dn', '-c', 'copy'], ...sizeLimitArgs(maxBytes)];
  const bounds = { timeLimitMs: timeLimitMs((await stat(input.input)).size), maxBytes };
  const written = await writeMp4OrMatroska(ffmpeg, args, output, bounds, signal);
  if (written.ok) return written.file;
  if (NO_VIDEO.test(written.stderr)) throw noVideo();
  throw new DownloadError('processing_failed', failureLine(written.stderr, [input.input, written.temp]));
}

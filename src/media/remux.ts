import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../downloads/errors.ts';
import { failureLine, runFfmpeg } from './ffmpeg.ts';
import { probe } from './probe.ts';

export type RemuxedFile = { path: string; mime: 'video/mp4' | 'video/x-matroska'; ext: 'mp4' | 'mkv' };

type Target = Omit<RemuxedFile, 'path'> & { args: string[] };

// MP4 plays everywhere; Matroska takes any codec, for the streams MP4 has no place for (VP8,
// Theora, PCM, and codecs that ffmpeg only writes to MP4 under -strict experimental).
const MP4: Target = { mime: 'video/mp4', ext: 'mp4', args: ['-movflags', '+faststart', '-f', 'mp4'] };
const MATROSKA: Target = { mime: 'video/x-matroska', ext: 'mkv', args: ['-f', 'matroska'] };

const NOT_IN_MP4 = /codec not currently supported in container|Could not find tag for codec|in MP4 support is experimental/i;

/**
 * Copies the video and audio of `inputs` (video from the first, audio from the last when there are
 * several) into one file at `output` plus the extension of the container it chose, without
 * re-encoding. On failure nothing is left at the output's place and processing_failed is thrown.
 */
export async function remux(input: { ffmpeg: string; inputs: string[]; output: string; signal: AbortSignal }): Promise<RemuxedFile> {
  const { ffmpeg, inputs, output, signal } = input;
  const last = inputs.length - 1;
  if (last < 0) throw new Error('remux needs at least one input');
  // An output of an earlier run must not pass for this run's when this one fails.
  await Promise.all([MP4, MATROSKA].map((target) => rm(`${output}.${target.ext}`, { force: true })));
  const lastInput = await probe({ ffmpeg, file: inputs[last]!, signal });
  const args = [
    ...inputs.flatMap((file) => ['-i', file]),
    ...['-map', '0:v?', '-map', `${last}:a?`],
    ...['-c', 'copy'],
    // ADTS AAC (as MPEG-TS carries it) must become MP4's form; recent muxers insert this filter
    // by themselves, older builds (and some muxers of the bundled 2018 one) fail without it.
    ...(lastInput.streams.some((stream) => stream.kind === 'audio' && stream.codec === 'aac') ? ['-bsf:a', 'aac_adtstoasc'] : []),
  ];

  const first = await write(ffmpeg, args, output, MP4, signal);
  if (first.ok) return first.file;
  const second = NOT_IN_MP4.test(first.stderr) ? await write(ffmpeg, args, output, MATROSKA, signal) : first;
  if (second.ok) return second.file;
  throw new DownloadError('processing_failed', failureLine(second.stderr, [...inputs, second.temp]));
}

type Written = { ok: true; file: RemuxedFile } | { ok: false; stderr: string; temp: string };

async function write(ffmpeg: string, args: string[], output: string, target: Target, signal: AbortSignal): Promise<Written> {
  const file = `${output}.${target.ext}`;
  // Written aside and renamed, so that a file at the output's name is always a whole one.
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.part`);
  try {
    const run = await runFfmpeg(ffmpeg, ['-loglevel', 'error', '-y', ...args, ...target.args, temp], signal);
    if (run.exitCode !== 0) return { ok: false, stderr: run.stderr, temp };
    await rename(temp, file);
    return { ok: true, file: { path: file, mime: target.mime, ext: target.ext } };
  } finally {
    await rm(temp, { force: true });
  }
}

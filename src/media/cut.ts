import { rm, stat } from 'node:fs/promises';
import type { Clip } from '../core/clip.ts';
import { clipOutOfRange, DownloadError } from '../core/errors.ts';
import { containerOfDeclared } from './containers.ts';
import { detectContainer } from './detect-container.ts';
import { failureLine, timeLimitMs } from './ffmpeg.ts';
import { inputArgs } from './input.ts';
import { keptStartSeconds } from './kept-start.ts';
import { removeOutputs, sizeLimitArgs, TO_MATROSKA, TO_MP4, writeMp4OrMatroska, writeOutput, type RemuxedFile, type Written } from './output-file.ts';
import { probe } from './probe.ts';

// A clip of a whole file, cut without re-encoding. `-ss` before the input seeks the demuxer to the
// last keyframe at or before the start, and stream copy keeps every packet from there, audio and
// video alike; `-avoid_negative_ts make_zero` moves them all by the same amount so that the file
// starts at 0 with its streams together, rather than hiding the lead-in behind an edit list.

const WEBM_CONTAINER = containerOfDeclared('video/webm');
const TO_WEBM = WEBM_CONTAINER ? { container: WEBM_CONTAINER, args: ['-f', 'webm'] } : null;

export type CutInput = {
  ffmpeg: string;
  input: string;
  /** Where to write: this path plus the extension of the container chosen. */
  output: string;
  clip: Clip;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
  /** How long the input lasts, as its reader's probe found; null when unknown. */
  durationSeconds: number | null;
};

/** The clip as written, and where in the input what it kept starts (see kept-start.ts). */
export type ClipFile = RemuxedFile & { keptFromSeconds: number };

// ffmpeg holds a time as int64 microseconds (about 9.2e12 s) and refuses one past that; any time
// beyond this is past the end of any media, so it is written as this.
const FFMPEG_LONGEST_SECONDS = 9e12;
// The shortest time written (1 µs): a clip shorter still would be `-t 0`, which keeps nothing.
const FFMPEG_SHORTEST_SECONDS = 0.000001;

/** Seconds as ffmpeg reads a time: plain decimal, never an exponent, never past what ffmpeg holds. */
export function seconds(value: number): string {
  return Math.min(value, FFMPEG_LONGEST_SECONDS).toFixed(6);
}

/**
 * Writes `clip` of `input` at `output` plus the extension of its container: WebM stays WebM, all
 * else goes to MP4, or to Matroska when a stream has no place in MP4. Every video, audio and
 * subtitle stream is kept. A start at or past the media's end throws clip_out_of_range; on any
 * failure nothing is left at the output's place and processing_failed (source_too_large past
 * `maxBytes`, storage_full when the disk is full) is thrown.
 */
export async function cutClip(input: CutInput): Promise<ClipFile> {
  const { ffmpeg, output, clip, maxBytes, signal } = input;
  await removeOutputs(output, [TO_MP4.container.ext, TO_MATROSKA.container.ext, ...(TO_WEBM ? [TO_WEBM.container.ext] : [])]);
  // Known from the reader's probe: no ffmpeg run is spent on a clip that cannot be.
  if (input.durationSeconds !== null && clip.startSeconds >= input.durationSeconds) {
    throw clipOutOfRange(clip.startSeconds, input.durationSeconds);
  }
  const opened = await inputArgs(input.input, input.declaredType);
  const end = clip.endSeconds === null ? [] : ['-t', seconds(Math.max(clip.endSeconds - clip.startSeconds, FFMPEG_SHORTEST_SECONDS))];
  const args = [
    ...['-ss', seconds(clip.startSeconds)],
    ...opened,
    ...end,
    ...['-map', '0:v?', '-map', '0:a?', '-map', '0:s?', '-c', 'copy', '-avoid_negative_ts', 'make_zero'],
    ...sizeLimitArgs(maxBytes),
  ];
  const bounds = { timeLimitMs: timeLimitMs((await stat(input.input)).size), maxBytes };
  const webm = TO_WEBM && (await detectContainer(input.input, input.declaredType ?? null)) === WEBM_CONTAINER;
  const written: Written = webm
    ? await writeOutput(ffmpeg, args, output, TO_WEBM, bounds, signal)
    : await writeMp4OrMatroska(ffmpeg, args, output, bounds, signal);
  if (!written.ok) throw new DownloadError('processing_failed', failureLine(written.stderr, [input.input, written.temp]));
  // What the run reports as written is the time of its last packet; the file's own header says what was kept.
  const kept = await probe({ ffmpeg, file: written.file.path, signal });
  if (!kept.durationSeconds) {
    // A source that does not say how long it lasts can only be found too short by cutting it.
    await rm(written.file.path, { force: true });
    throw clipOutOfRange(clip.startSeconds, null);
  }
  const keptFromSeconds = await keptStartSeconds({
    ffmpeg,
    input: input.input,
    startSeconds: clip.startSeconds,
    signal,
    declaredType: input.declaredType,
  }).catch(async (error: unknown) => {
    await rm(written.file.path, { force: true });
    throw error;
  });
  return { ...written.file, info: kept, keptFromSeconds };
}

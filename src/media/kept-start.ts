import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { failureLine, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { inputArgs } from './input.ts';

// Where in the source a cut made by cutClip starts. Its `-ss` lands on the keyframe at or before
// the clip's start, and `-avoid_negative_ts make_zero` moves every stream by the earliest decode
// time written: so the cut's 0 is the least first-packet dts of its video and audio after the same
// seek. One packet of each (`V`: not a cover picture), copied with the source's own times into
// framecrc, says it exactly.

// framecrc's lines: `#tb <stream>: <num>/<den>`, then `<stream>, <dts>, <pts>, <duration>, <size>, <crc>`.
const TIME_BASE = /^#tb (\d{1,3}): (\d{1,10})\/(\d{1,10})$/;
const PACKET = /^(\d{1,3}), +(-?\d{1,19}), /;

export type KeptStartInput = {
  ffmpeg: string;
  input: string;
  startSeconds: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
};

/** The source time (seconds, from the start of the media) at which a clip of `input` cut from `startSeconds` starts. */
export async function keptStartSeconds(input: KeptStartInput): Promise<number> {
  const opened = await inputArgs(input.input, input.declaredType);
  const args = [
    ...['-loglevel', 'error', '-ss', input.startSeconds.toFixed(6)],
    ...opened,
    ...['-map', '0:V:0?', '-map', '0:a:0?', '-c', 'copy', '-frames:v', '1', '-frames:a', '1'],
    // framecrc goes to stderr, which runFfmpeg reads (and bounds); with `-loglevel error` nothing else does on success.
    ...['-copyts', '-start_at_zero', '-f', 'framecrc', 'pipe:2'],
  ];
  const run = await runFfmpeg(input.ffmpeg, args, { timeLimitMs: timeLimitMs((await stat(input.input)).size) }, input.signal);
  const timeBases = new Map<string, number>();
  let earliest = Infinity;
  for (const line of run.stderr.split(/\r?\n/)) {
    const base = TIME_BASE.exec(line);
    if (base && Number(base[3]) > 0) timeBases.set(base[1]!, Number(base[2]) / Number(base[3]));
    const packet = PACKET.exec(line);
    const unit = packet && timeBases.get(packet[1]!);
    if (unit) earliest = Math.min(earliest, Number(packet[2]) * unit);
  }
  if (run.exitCode !== 0 || !Number.isFinite(earliest)) throw new DownloadError('processing_failed', failureLine(run.stderr, [input.input]));
  // Below 0 where a stream's first packet is decoded before 0 (a B-frame's lead): the cut moves by that too.
  return earliest;
}

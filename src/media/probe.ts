import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { failureLine, LEVELLED_LOG, logLines, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { clockSeconds, codecsOf, parseStreams, reportedDuration, type FileCodecs, type StreamDetails } from './codecs.ts';
import { inputArgs } from './input.ts';

export type MediaInfo = {
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  streams: StreamDetails[];
  /** What the API says of the streams: read in the same run, so that a file is probed once. */
  codecs: FileCodecs;
};

// The last report line of a run that wrote a file (`frame=... time=...`, or `size=...` for sound
// alone): how long what it wrote lasts.
const WRITTEN_TIME = /^(?:frame|size)=.*\btime=(\d+):(\d+):(\d+(?:\.\d+)?)/gm;

/**
 * What `ffmpeg -i` says about a file: its duration, the size of its first real video stream (not a
 * cover picture), and the codec of every stream. Throws unsupported_source when the file is not in
 * a container of the table (see `inputArgs`; `declaredType` is asked only when its bytes say
 * nothing), and processing_failed when ffmpeg cannot read it.
 */
export async function probe(input: { ffmpeg: string; file: string; signal?: AbortSignal; declaredType?: string | null }): Promise<MediaInfo> {
  const args = await inputArgs(input.file, input.declaredType);
  // Without an output ffmpeg always exits 1; whether it could read the input shows in what it printed.
  const { stderr } = await runFfmpeg(input.ffmpeg, [...LEVELLED_LOG, ...args], { timeLimitMs: timeLimitMs((await stat(input.file)).size) }, input.signal);
  const info = infoOfRun(stderr);
  if (!info) throw new DownloadError('processing_failed', failureLine(stderr, [input.file]));
  return info;
}

/** What a run of `ffmpeg -i` (with `LEVELLED_LOG`) said of its input; null when it could not read it. */
export function infoOfRun(stderr: string): MediaInfo | null {
  const report = infoReport(stderr);
  if (!/^Input #0/m.test(report)) return null;
  return mediaInfo(parseStreams(report), reportedDuration(report, 'Input #0'));
}

/**
 * What a run that wrote a file (with `LEVELLED_LOG`) said about it: the streams of its output #0
 * and how long they last. The file need not be read again to be described.
 */
export function writtenInfo(stderr: string): MediaInfo {
  const report = infoReport(stderr);
  const time = [...report.matchAll(WRITTEN_TIME)].at(-1);
  return mediaInfo(parseStreams(report, 'Output #0'), time ? clockSeconds(time) : null);
}

/**
 * The lines ffmpeg printed as its report (`LEVELLED_LOG` tags each with its level). A line of a
 * file's tag that holds a line break goes out untagged, and is left out with the errors.
 */
function infoReport(stderr: string): string {
  return logLines(stderr)
    .filter((line) => line.level === 'info')
    .map((line) => line.text)
    .join('\n');
}

function mediaInfo(streams: StreamDetails[], durationSeconds: number | null): MediaInfo {
  const picture = streams.find((stream) => stream.kind === 'video' && !stream.attachedPicture && stream.size)?.size;
  return { durationSeconds, width: picture?.width ?? null, height: picture?.height ?? null, streams, codecs: codecsOf(streams) };
}

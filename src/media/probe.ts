import { stat } from 'node:fs/promises';
import { DownloadError } from '../core/errors.ts';
import { failureLine, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { codecsOf, parseStreams, type FileCodecs, type StreamDetails } from './codecs.ts';
import { inputArgs } from './input.ts';

export type MediaInfo = {
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  streams: StreamDetails[];
  /** What the API says of the streams: read in the same run, so that a file is probed once. */
  codecs: FileCodecs;
};

const STREAM = /^\s*Stream #\d+:\d+\S*: (Video|Audio|Subtitle|Data|Attachment): \w+(.*)$/;
const DURATION = /^\s*Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/m;
// Preceded by ", " so that hex codec tags such as "0x31637661" are never taken for a size.
const SIZE = /,\s([1-9]\d*)x([1-9]\d*)\b/;

/**
 * What `ffmpeg -i` says about a file: its duration, the size of its first real video stream (not a
 * cover picture), and the codec of every stream. Throws unsupported_source when the file is not in
 * a container of the table (see `inputArgs`; `declaredType` is asked only when its bytes say
 * nothing), and processing_failed when ffmpeg cannot read it.
 */
export async function probe(input: { ffmpeg: string; file: string; signal?: AbortSignal; declaredType?: string | null }): Promise<MediaInfo> {
  const args = await inputArgs(input.file, input.declaredType);
  // Without an output ffmpeg always exits 1; whether it could read the input shows in what it printed.
  const { stderr } = await runFfmpeg(input.ffmpeg, args, { timeLimitMs: timeLimitMs((await stat(input.file)).size) }, input.signal);
  if (!/^Input #0/m.test(stderr)) throw new DownloadError('processing_failed', failureLine(stderr, [input.file]));

  const duration = DURATION.exec(stderr);
  const streams = parseStreams(stderr);
  const info: MediaInfo = {
    durationSeconds: duration ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]) : null,
    width: null,
    height: null,
    streams,
    codecs: codecsOf(streams),
  };
  for (const line of stderr.split(/\r?\n/)) {
    const stream = STREAM.exec(line);
    const size = stream?.[1] === 'Video' ? SIZE.exec(stream[2]!) : null;
    if (size && !line.includes('(attached pic)')) {
      info.width = Number(size[1]);
      info.height = Number(size[2]);
      break;
    }
  }
  return info;
}

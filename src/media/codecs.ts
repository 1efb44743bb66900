import { labelOf } from '../core/text.ts';
import { terminological } from './languages.ts';

// What a file holds stream by stream, for the Download's `file.audio_codec`, `file.video_codec`
// and `file.subtitles`: read from what ffmpeg prints about its input (`ffmpeg -i`, probe.ts) or
// about the output it wrote, with each stream's language (its `Stream #0:N(eng)` tag) and its
// metadata lines (`title`, `handler_name`).

export type StreamDetails = {
  kind: 'video' | 'audio' | 'subtitle' | 'data' | 'attachment';
  codec: string;
  /** ISO 639-2/T (`deu`, never `ger`); null when the file names none, or `und`. */
  language: string | null;
  /** The stream's `title`, else a `handler_name` that is more than a muxer's default; null when neither. */
  label: string | null;
  /** A cover picture, not a video (only where this ffmpeg prints `(attached pic)`: the bundled 2018 one does not for MP4). */
  attachedPicture: boolean;
  /** A video stream's picture size; null for other streams, or where ffmpeg printed none. */
  size: { width: number; height: number } | null;
};

export type SubtitleTrackInfo = { language: string | null; label: string | null };

export type FileCodecs = {
  /** The first audio stream's codec as ffmpeg names it (`aac`, `opus`, `mp3`); null without sound. */
  audioCodec: string | null;
  /** The first video stream's codec that is not a cover picture (`h264`, `vp9`); null for audio. */
  videoCodec: string | null;
  subtitles: SubtitleTrackInfo[];
};

// `Stream #0:1[0x2](eng): Audio: aac (LC) ...` (ffmpeg 5), `Stream #0:1(eng): Audio: ...` (4).
// The language a demuxer read is printed as it came, brackets and all (so the last `): Kind:` ends
// it): anything but three letters is not one.
const STREAM = /^\s+Stream #0:\d+(?:\[0x[0-9a-f]+\])?(?:\((.*)\))?: (Video|Audio|Subtitle|Data|Attachment): (\w+)(.*)$/;
// `      title           : Director's comments`; continuation lines of a multi-line value start with `:`.
const METADATA = /^\s+([A-Za-z][\w-]*)\s*: (.*)$/;
// `  Duration: 00:01:02.50, start: ...`
const DURATION = /^\s+Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/;
// Headings of blocks whose lines, indented below them, are the file's own words (tags, chapter
// titles) or details no figure is read from.
const BLOCK = /^\s+(Metadata|Chapters|Side data):$/;
// What muxers write when nobody named the track: no label.
const DEFAULT_HANDLER = /handler$|^Core Media /i;

type ReportLine = { text: string; inMetadata: boolean };

// The first stream's line as ffmpeg 5 (two spaces) or 4 (four) indents it; a stream's tags are deeper.
const FIRST_STREAM = /^ {2}(?: {2})?Stream #0:0[[(:]/;

/**
 * The lines of ffmpeg's report on its input #0 (`ffmpeg -i`) or on the output #0 it wrote. A file's
 * tags are printed as they are, and may read like ffmpeg's own lines (`Stream #0:9: Video: ...`,
 * `Duration: 09:09:09`), so a line is ffmpeg's only outside the blocks that hold them: the lines of
 * a Metadata block come marked as such, those of other blocks not at all.
 */
function* reportLines(report: string, heading: 'Input #0' | 'Output #0'): Generator<ReportLine> {
  const lines = report.split(/\r?\n/);
  const start = lines.findIndex((line) => line.startsWith(heading));
  if (start < 0) return;
  // The report is indented throughout; the first line that is not ends it.
  const end = lines.findIndex((line, at) => at > start && !/^\s/.test(line));
  const own = lines.slice(start + 1, end < 0 ? undefined : end);
  // ffmpeg 4 indents an output's streams as deep as the file's tags, with no line between them;
  // the tags come first, so its streams start at the last line that reads as its first stream.
  const firstStream = heading === 'Output #0' ? own.findLastIndex((line) => FIRST_STREAM.test(line)) : -1;
  let block: { indent: number; metadata: boolean } | null = null;
  for (const [at, line] of own.entries()) {
    const indent = line.length - line.trimStart().length;
    if (at === firstStream) block = null;
    if (block && indent > block.indent) {
      if (block.metadata) yield { text: line, inMetadata: true };
      continue;
    }
    const opens = BLOCK.exec(line);
    block = opens ? { indent, metadata: opens[1] === 'Metadata' } : null;
    if (!opens) yield { text: line, inMetadata: false };
  }
}

/** How long ffmpeg's report on `heading` says the file lasts; null when it says nothing (or `N/A`). */
export function reportedDuration(report: string, heading: 'Input #0' | 'Output #0'): number | null {
  for (const line of reportLines(report, heading)) {
    const duration = !line.inMetadata && DURATION.exec(line.text);
    if (duration) return clockSeconds(duration);
  }
  return null;
}

/** `hh:mm:ss.ff` as ffmpeg prints a time, matched as its three numbers. */
export function clockSeconds(match: RegExpMatchArray): number {
  return Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]);
}

/** The streams of ffmpeg's report on its input #0 (`ffmpeg -i`), or on the output #0 it wrote, in their order. */
export function parseStreams(report: string, heading: 'Input #0' | 'Output #0' = 'Input #0'): StreamDetails[] {
  const streams: StreamDetails[] = [];
  let current: { details: StreamDetails; title?: string; handler?: string } | null = null;
  const finish = () => {
    if (!current) return;
    const handler = current.handler !== undefined && !DEFAULT_HANDLER.test(current.handler.trim()) ? current.handler : undefined;
    current.details.label = labelOf(current.title) ?? labelOf(handler);
    streams.push(current.details);
    current = null;
  };
  for (const { text, inMetadata } of reportLines(report, heading)) {
    if (inMetadata) {
      const entry = current && METADATA.exec(text);
      if (!current || !entry) continue;
      const key = entry[1]!.toLowerCase();
      if (key === 'title') current.title ??= entry[2];
      else if (key === 'handler_name') current.handler ??= entry[2];
      continue;
    }
    // Any other line of ffmpeg's own (a program, the next stream) ends the stream before it.
    finish();
    const stream = STREAM.exec(text);
    if (!stream) continue;
    const language = stream[1]?.toLowerCase() ?? '';
    current = {
      details: {
        kind: stream[2]!.toLowerCase() as StreamDetails['kind'],
        codec: stream[3]!,
        language: /^[a-z]{3}$/.test(language) && language !== 'und' ? terminological(language) : null,
        label: null,
        attachedPicture: stream[4]!.includes('(attached pic)'),
        size: stream[2] === 'Video' ? sizeOf(stream[4]!) : null,
      },
    };
  }
  finish();
  return streams;
}

// Preceded by ", " so that hex codec tags such as "0x31637661" are never taken for a size.
const SIZE = /,\s([1-9]\d*)x([1-9]\d*)\b/;

function sizeOf(description: string): StreamDetails['size'] {
  const size = SIZE.exec(description);
  return size ? { width: Number(size[1]), height: Number(size[2]) } : null;
}

/** The codecs and subtitle tracks of already-read streams. */
export function codecsOf(streams: StreamDetails[]): FileCodecs {
  return {
    audioCodec: streams.find((stream) => stream.kind === 'audio')?.codec ?? null,
    videoCodec: streams.find((stream) => stream.kind === 'video' && !stream.attachedPicture)?.codec ?? null,
    subtitles: streams.filter((stream) => stream.kind === 'subtitle').map(({ language, label }) => ({ language, label })),
  };
}

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
// The language a demuxer read is printed as it came: anything but three letters is not one.
const STREAM = /^\s+Stream #0:\d+(?:\[0x[0-9a-f]+\])?(?:\(([^)]*)\))?: (Video|Audio|Subtitle|Data|Attachment): (\w+)(.*)$/;
// `      title           : Director's comments`; continuation lines of a multi-line value start with `:`.
const METADATA = /^\s+([A-Za-z][\w-]*)\s*: (.*)$/;
// What muxers write when nobody named the track: no label.
const DEFAULT_HANDLER = /handler$|^Core Media /i;
const MAX_LABEL_CHARS = 200;

function cleanLabel(text: string | undefined): string | null {
  if (text === undefined) return null;
  const label = text.replace(/[\u0000-\u001f\u007f]/g, ' ').trim();
  return label ? label.slice(0, MAX_LABEL_CHARS) : null;
}

/** The streams of ffmpeg's report on its input #0 (`ffmpeg -i`), or on the output #0 it wrote, in their order. */
export function parseStreams(stderr: string, heading: 'Input #0' | 'Output #0' = 'Input #0'): StreamDetails[] {
  const streams: StreamDetails[] = [];
  let current: { details: StreamDetails; title?: string; handler?: string } | null = null;
  const finish = () => {
    if (!current) return;
    const handler = current.handler !== undefined && !DEFAULT_HANDLER.test(current.handler.trim()) ? current.handler : undefined;
    current.details.label = cleanLabel(current.title) ?? cleanLabel(handler);
    streams.push(current.details);
    current = null;
  };
  const lines = stderr.split(/\r?\n/);
  const start = lines.findIndex((line) => line.startsWith(heading));
  if (start < 0) return streams;
  for (const line of lines.slice(start + 1)) {
    // The report is indented throughout; the first line that is not ends it.
    if (!/^\s/.test(line)) break;
    const stream = STREAM.exec(line);
    if (stream) {
      finish();
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
      continue;
    }
    const entry = current && METADATA.exec(line);
    if (!current || !entry) continue;
    const key = entry[1]!.toLowerCase();
    if (key === 'title') current.title ??= entry[2];
    else if (key === 'handler_name') current.handler ??= entry[2];
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

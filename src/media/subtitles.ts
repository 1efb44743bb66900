import { lstat, open, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../core/errors.ts';
import { labelOf } from '../core/text.ts';
import { failureLine, runFfmpeg, timeLimitMs } from './ffmpeg.ts';
import { fileUrl, inputArgs } from './input.ts';
import { iso639_2, UNDETERMINED } from './languages.ts';
import { NOT_IN_MP4, removeOutputs, sizeLimitArgs, TO_MATROSKA, TO_MP4, writeOutput, type OutputTarget, type RemuxedFile } from './output-file.ts';
import { probe } from './probe.ts';

// Subtitle tracks a source offered (fetched by the service into files of its own) embedded in the
// file beside its video and audio, which are copied, never re-encoded: in MP4 as `mov_text`, with
// the ISO 639-2/T code MP4 wants (`eng`, `deu`, `por`) and the label as the track's handler name.
// When the video or audio has no place in MP4, the file stays Matroska (as remux made it) and the
// tracks go in as SubRip, with the ISO 639-2/B code Matroska wants and the label as title.
//
// Only WebVTT is read. Neither ffmpeg the service runs on can read TTML (DASH's `stpp`, and
// TTML files): Debian's 5.1 has a TTML encoder and muxer only, the bundled 2018 build has neither
// way; a TTML track must be made WebVTT before it comes here, or be left out.
//
// Subtitle text is the source's, so it is hostile: each file must be a regular file of at most
// MAX_SUBTITLE_BYTES that starts as WebVTT starts and is UTF-8, and ffmpeg opens it from the
// local disk only, always with its WebVTT demuxer, never guessing. A track that fails a check is
// left out (and said so in `skipped`): a source's subtitles are an extra that must not fail a download.

export const MAX_SUBTITLE_BYTES = 5 * 1024 * 1024;
/** Tracks past this many are left out: each is an input ffmpeg holds open and in memory. */
export const MAX_SUBTITLE_TRACKS = 32;
// A mov_text sample (a cue's text and its style records) has a 16-bit size, and the 2018 ffmpeg
// hangs instead of failing on a longer one: no block of the file may come near it.
const MAX_BLOCK_BYTES = 16 * 1024;
// A cue past the end of the video (at 99 hours, say) would stretch the file; the output is cut
// a little after the video's end instead.
const END_MARGIN_SECONDS = 2;
// Writing one subtitle file takes ffmpeg a moment; this is for one that makes it hang.
const CHECK_TIME_MS = 15_000;

export type SubtitleTrack = {
  /** A WebVTT file the service wrote. */
  file: string;
  /** The track's BCP 47 language tag as the source gave it (`en`, `pt-BR`, `zh-Hans`). */
  language: string;
  /** The source's name for the track (`English (SDH)`), if any. */
  label?: string | null;
};

export type EmbeddedSubtitle = {
  file: string;
  /** ISO 639-2/T (`eng`, `deu`); null when the tag names no language this knows. */
  language: string | null;
  label: string | null;
};

export type SkippedSubtitle = { file: string; reason: string };

export type FileWithSubtitles = RemuxedFile & { subtitles: EmbeddedSubtitle[]; skipped: SkippedSubtitle[] };

export type EmbedSubtitlesInput = {
  ffmpeg: string;
  /** The file whose video and audio are kept (remux's output, usually). */
  input: string;
  tracks: SubtitleTrack[];
  /** Where to write: this path plus the extension of the container chosen. */
  output: string;
  /** The largest file it may write (MAX_FILE_BYTES); ffmpeg is stopped as it passes it. */
  maxBytes: number;
  signal: AbortSignal;
  /** The type the source declared, asked only for an input whose bytes name no container. */
  declaredType?: string | null;
};

type Target = OutputTarget & { subtitleCodec: string; languageForm: 'T' | 'B'; labelKey: string };

const MP4_WITH_SUBTITLES: Target = { ...TO_MP4, subtitleCodec: 'mov_text', languageForm: 'T', labelKey: 'handler_name' };
const MATROSKA_WITH_SUBTITLES: Target = { ...TO_MATROSKA, subtitleCodec: 'srt', languageForm: 'B', labelKey: 'title' };

const WEBVTT_SIGNATURE = /^(?:\uFEFF)?WEBVTT(?:[ \t\r\n]|$)/;

/** Why `file` cannot be embedded, or null when it can. */
export async function subtitleFileProblem(file: string): Promise<string | null> {
  const stats = await lstat(file).catch(() => null);
  if (!stats?.isFile()) return 'not a regular file';
  if (stats.size > MAX_SUBTITLE_BYTES) return `larger than ${MAX_SUBTITLE_BYTES} bytes`;
  const handle = await open(file, 'r');
  let bytes: Buffer;
  try {
    // Read no more than the bound, whatever the file has grown to since.
    bytes = Buffer.alloc(stats.size);
    const { bytesRead } = await handle.read(bytes, 0, stats.size, 0);
    bytes = bytes.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return 'not UTF-8 text';
  }
  if (!WEBVTT_SIGNATURE.test(text)) return 'not a WebVTT file';
  if (text.split(/\r?\n\r?\n|\r\r/).some((block) => Buffer.byteLength(block) > MAX_BLOCK_BYTES)) return `a block longer than ${MAX_BLOCK_BYTES} bytes`;
  return null;
}

function trackArgs(tracks: SubtitleTrack[], target: Target, firstInput: number): string[] {
  const args: string[] = [];
  tracks.forEach((track, n) => {
    args.push('-map', `${firstInput + n}:s:0`, `-metadata:s:s:${n}`, `language=${iso639_2(track.language, target.languageForm)}`);
    const label = labelOf(track.label);
    if (label) args.push(`-metadata:s:s:${n}`, `${target.labelKey}=${label}`);
  });
  if (tracks.length) args.push('-c:s', target.subtitleCodec, '-disposition:s', '0');
  return args;
}

/**
 * Writes `input`'s video and audio streams, copied, with `tracks` as subtitle streams, at `output`
 * plus the extension of the container chosen (MP4, or Matroska when the video or audio has no
 * place in MP4; see above). The input's own subtitle and data streams are left out. A track that
 * fails the checks, or that ffmpeg cannot turn into a subtitle stream, is left out and listed in
 * `skipped`. Refuses an input that is not in a container of the table as unsupported_source; on
 * failure nothing is left at the output's place and processing_failed (source_too_large past
 * `maxBytes`, storage_full when the disk is full) is thrown.
 */
export async function embedSubtitles(input: EmbedSubtitlesInput): Promise<FileWithSubtitles> {
  const { ffmpeg, output, maxBytes, signal } = input;
  await removeOutputs(output, [TO_MP4.container.ext, TO_MATROSKA.container.ext]);
  const opened = await inputArgs(input.input, input.declaredType);
  const info = await probe({ ffmpeg, file: input.input, signal, declaredType: input.declaredType });

  const skipped: SkippedSubtitle[] = [];
  let tracks: SubtitleTrack[] = [];
  for (const track of input.tracks) {
    const problem = tracks.length >= MAX_SUBTITLE_TRACKS ? `more than ${MAX_SUBTITLE_TRACKS} tracks` : await subtitleFileProblem(track.file);
    if (problem) skipped.push({ file: track.file, reason: problem });
    else tracks.push(track);
  }

  const inputBytes = (await stat(input.input)).size + tracks.length * MAX_SUBTITLE_BYTES;
  const bounds = { timeLimitMs: timeLimitMs(inputBytes), maxBytes };
  const write = (target: Target, kept: SubtitleTrack[]) => {
    const args = [
      ...opened,
      ...kept.flatMap((track) => ['-protocol_whitelist', 'file', '-f', 'webvtt', '-i', fileUrl(track.file)]),
      ...['-map', '0:v?', '-map', '0:a?', '-c:v', 'copy', '-c:a', 'copy'],
      ...(info.streams.some((stream) => stream.kind === 'audio' && stream.codec === 'aac') ? ['-bsf:a', 'aac_adtstoasc'] : []),
      ...trackArgs(kept, target, 1),
      ...(info.durationSeconds !== null ? ['-t', (info.durationSeconds + END_MARGIN_SECONDS).toFixed(3)] : []),
      ...sizeLimitArgs(maxBytes),
    ];
    return writeOutput(ffmpeg, args, output, target, bounds, signal);
  };

  let target = MP4_WITH_SUBTITLES;
  let written = await write(target, tracks);
  if (!written.ok && NOT_IN_MP4.test(written.stderr)) {
    target = MATROSKA_WITH_SUBTITLES;
    written = await write(target, tracks);
  }
  if (!written.ok && tracks.length) {
    // One of the tracks may be what ffmpeg could not take: find which, and try once more without them.
    const failed = new Set<SubtitleTrack>();
    for (const track of tracks) {
      const reason = await subtitleStreamProblem(ffmpeg, track.file, target, output, signal);
      if (reason) {
        failed.add(track);
        skipped.push({ file: track.file, reason });
      }
    }
    if (failed.size) {
      tracks = tracks.filter((track) => !failed.has(track));
      written = await write(target, tracks);
    }
  }
  if (!written.ok) throw new DownloadError('processing_failed', failureLine(written.stderr, [input.input, ...tracks.map((track) => track.file), written.temp]));
  const subtitles = tracks.map((track) => {
    const language = iso639_2(track.language);
    return { file: track.file, language: language === UNDETERMINED ? null : language, label: labelOf(track.label) };
  });
  // ffmpeg prints at most 255 bytes of a tag's value, cut wherever they end (inside a character
  // too): the file's subtitle tracks are said as they were written here, not as its report reads.
  const report = written.file.info;
  const codecs = { ...report.codecs, subtitles: subtitles.map(({ language, label }) => ({ language, label })) };
  return { ...written.file, info: { ...report, codecs }, subtitles, skipped };
}

/**
 * What ffmpeg says when it writes one WebVTT file alone, as `target` would hold it, into a scratch
 * file beside `output` (some failures, such as a cue that ends before it starts, show only in the
 * muxer); null when it can.
 */
async function subtitleStreamProblem(ffmpeg: string, file: string, target: Target, output: string, signal: AbortSignal): Promise<string | null> {
  const scratch = path.join(path.dirname(output), `.${path.basename(output)}.subtitle-check.part`);
  const args = ['-loglevel', 'error', '-y', '-protocol_whitelist', 'file', '-f', 'webvtt', '-i', fileUrl(file), '-map', '0:s:0', '-c:s', target.subtitleCodec];
  try {
    const limits = { timeLimitMs: CHECK_TIME_MS, output: { file: scratch, maxBytes: 4 * MAX_SUBTITLE_BYTES } };
    const run = await runFfmpeg(ffmpeg, [...args, ...target.args, fileUrl(scratch)], limits, signal).catch((error: unknown) => {
      if (signal.aborted) throw error;
      return { exitCode: null, stderr: error instanceof Error ? error.message : String(error) };
    });
    return run.exitCode === 0 ? null : `ffmpeg could not write it: ${failureLine(run.stderr, [file, scratch])}`;
  } finally {
    await rm(scratch, { force: true });
  }
}

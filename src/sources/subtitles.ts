import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../core/errors.ts';
import { withoutControls } from '../core/text.ts';
import { embedSubtitles, MAX_SUBTITLE_BYTES } from '../media/subtitles.ts';
import { shiftWebVtt } from '../media/webvtt-timing.ts';
import { fetchWhole } from '../net/whole-body.ts';
import { remadeAs } from './apply-mode.ts';
import { fetchDocument } from './document-limits.ts';
import type { FetchedMedia, MediaContext } from './reader.ts';
import { MAX_SEGMENT_BYTES, stppDocuments } from './ttml/stpp.ts';
import { cuesToWebVtt, type Cue } from './ttml/to-webvtt.ts';
import type { SubtitleOffer } from './types.ts';

// The subtitle tracks a download asks for, out of those its source offers: fetched as hostile
// text (bounded, WebVTT only, never a path or a format guess) and embedded in the file. A language
// the source lacks, or a track that cannot be had, is left out; it never fails the download.

/** Segments of one stpp track read, at most: twelve hours of two-second segments. */
const MAX_STPP_SEGMENTS = 21_600;

const primary = (tag: string) => tag.split('-')[0]!.toLowerCase();

/** `all`, or the offers whose language's primary subtag is asked for (`en` takes `en-US`). */
export function wantedSubtitles(offers: readonly SubtitleOffer[], asked: readonly string[]): SubtitleOffer[] {
  if (asked.some((tag) => tag.toLowerCase() === 'all')) return [...offers];
  const languages = new Set(asked.map(primary));
  return offers.filter((offer) => offer.language !== null && languages.has(primary(offer.language)));
}

const limit = { maxBytes: MAX_SUBTITLE_BYTES, tooLarge: (url: string) => `The subtitles at ${url} are larger than ${MAX_SUBTITLE_BYTES} bytes.` };
const segmentLimit = { maxBytes: MAX_SEGMENT_BYTES, tooLarge: (url: string) => `The subtitle segment at ${url} is larger than ${MAX_SEGMENT_BYTES} bytes.` };

/** TTML documents read into cues in the sandbox (a parser of hostile XML), as one WebVTT text. */
async function fromTtml(ctx: MediaContext, documents: string[]): Promise<string> {
  const cues: Cue[] = [];
  for (const xml of documents) cues.push(...(await ctx.sandbox.ttml({ xml }, ctx.signal)));
  // A cue that spans two segments is in both.
  const unique = new Map(cues.map((cue) => [`${cue.start}|${cue.end}|${cue.text}`, cue]));
  return cuesToWebVtt([...unique.values()]);
}

/** One WebVTT text: a WebVTT file as it is, a TTML file or stpp segments converted, or an HLS playlist's segments joined. */
async function subtitleText(ctx: MediaContext, offer: SubtitleOffer): Promise<string> {
  if (offer.format === 'file') {
    const text = (await fetchWhole(ctx.http, offer.url, limit, ctx.signal)).body.toString('utf8');
    // Its bytes say what it is: WebVTT is taken as it is (and checked as WebVTT when embedded), XML as TTML.
    return /^\uFEFF?\s*</.test(text) ? fromTtml(ctx, [text]) : text;
  }
  if (offer.format === 'stpp') {
    const documents: string[] = [];
    let size = 0;
    for (const url of offer.segments.slice(0, MAX_STPP_SEGMENTS)) {
      for (const document of stppDocuments((await fetchWhole(ctx.http, url, segmentLimit, ctx.signal)).body)) {
        size += document.length;
        if (size > MAX_SUBTITLE_BYTES) throw new DownloadError('unsupported_source', limit.tooLarge(offer.url));
        documents.push(document);
      }
    }
    return fromTtml(ctx, documents);
  }
  const playlist = await fetchDocument(ctx.http, offer.url, 'hls', ctx.signal);
  const reading = await ctx.sandbox.hls(
    { bytes: playlist.body, url: playlist.url, quality: ctx.quality, expect: 'muxed', maxSegments: ctx.maxSegments },
    ctx.signal,
  );
  if (reading.type !== 'media') throw new DownloadError('unsupported_source', `The subtitles at ${offer.url} are not a media playlist.`);
  const parts: string[] = [];
  let size = 0;
  for (const segment of reading.track.segments) {
    const text = (await fetchWhole(ctx.http, segment.url, limit, ctx.signal)).body.toString('utf8');
    size += text.length;
    if (size > MAX_SUBTITLE_BYTES) throw new DownloadError('unsupported_source', limit.tooLarge(offer.url));
    parts.push(parts.length === 0 ? text : text.replace(/^\uFEFF?WEBVTT[^\n]*\n(?:[^\n]+\n)*\n?/, ''));
  }
  return parts.join('\n');
}

/** The file with the asked-for subtitle tracks embedded; as it was when none is asked for, offered or had. */
export async function withSubtitles(ctx: MediaContext, media: FetchedMedia): Promise<FetchedMedia> {
  // An audio file holds no subtitle track.
  const wanted = ctx.mode === 'audio' ? [] : wantedSubtitles(media.subtitles ?? [], ctx.subtitles);
  const tracks = [];
  for (const [index, offer] of wanted.entries()) {
    try {
      const file = path.join(ctx.workDir, `subtitles-${index}.vtt`);
      // NUL ends a cue's text where ffmpeg reads it (and every cue after it); other controls and
      // direction overrides would reach players and terminals as they are.
      const text = withoutControls(await subtitleText(ctx, offer));
      // The source's cues are timed for the whole media; a clip's file starts where it was cut.
      await writeFile(file, media.keptFromSeconds === undefined ? text : shiftWebVtt(text, media.keptFromSeconds, media.durationSeconds));
      tracks.push({ file, language: offer.language ?? 'und', label: offer.label });
    } catch (error) {
      if (ctx.signal.aborted || !(error instanceof DownloadError)) throw error;
    }
  }
  if (tracks.length === 0) return media;
  const embedded = await embedSubtitles({
    ffmpeg: ctx.ffmpeg,
    input: media.path,
    tracks,
    output: `${media.path}.subtitled`,
    maxBytes: ctx.maxFileBytes,
    signal: ctx.signal,
    declaredType: media.mime,
  });
  return remadeAs(ctx, media, embedded);
}

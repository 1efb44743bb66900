import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../core/errors.ts';
import { describe } from '../media/describe.ts';
import { embedSubtitles, MAX_SUBTITLE_BYTES } from '../media/subtitles.ts';
import type { FetchedMedia, MediaContext } from './reader.ts';
import { fetchDocument, fetchWhole } from './small-bodies.ts';
import type { SubtitleOffer } from './types.ts';

// The subtitle tracks a download asks for, out of those its source offers: fetched as hostile
// text (bounded, WebVTT only, never a path or a format guess) and embedded in the file. A language
// the source lacks, or a track that cannot be had, is left out; it never fails the download.

const primary = (tag: string) => tag.split('-')[0]!.toLowerCase();

/** `all`, or the offers whose language's primary subtag is asked for (`en` takes `en-US`). */
export function wantedSubtitles(offers: readonly SubtitleOffer[], asked: readonly string[]): SubtitleOffer[] {
  if (asked.some((tag) => tag.toLowerCase() === 'all')) return [...offers];
  const languages = new Set(asked.map(primary));
  return offers.filter((offer) => offer.language !== null && languages.has(primary(offer.language)));
}

const limit = { maxBytes: MAX_SUBTITLE_BYTES, tooLarge: (url: string) => `The subtitles at ${url} are larger than ${MAX_SUBTITLE_BYTES} bytes.` };

/** One WebVTT text: a file as it is, or an HLS playlist's segments joined (each segment's own header dropped). */
async function subtitleText(ctx: MediaContext, offer: SubtitleOffer): Promise<string> {
  if (offer.format === 'vtt') return (await fetchWhole(ctx.http, offer.url, limit, ctx.signal)).body.toString('utf8');
  const playlist = await fetchDocument(ctx.http, offer.url, 'hls', ctx.signal);
  const reading = await ctx.sandbox.hls(
    { text: playlist.text, url: playlist.url, quality: ctx.quality, expect: 'muxed', maxSegments: ctx.maxSegments },
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
      await writeFile(file, await subtitleText(ctx, offer));
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
  ctx.phaseEnded('remux');
  const described = await describe(ctx.ffmpeg, embedded, ctx.signal);
  ctx.phaseEnded('probe');
  return { ...media, ...described, declaredType: described.mime };
}

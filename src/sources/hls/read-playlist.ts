import { DownloadError } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { Quality } from '../../core/quality.ts';
import type { SubtitleOffer, Track } from '../types.ts';
import { refuseDrm } from './keys.ts';
import { trackFromMediaPlaylist } from './media-track.ts';
import { parsePlaylist } from './parse.ts';
import { resolveUri } from './urls.ts';
import { chooseAudioUri, chooseVariant, isAudioOnly } from './variants.ts';

// One playlist's text to what it means for the download, with no network: a master playlist
// narrows to the variant (and audio rendition) that `quality` asks for, a media playlist becomes a
// track. It runs in the document reader's thread, so it must stay a pure function of its input.

export type HlsReadInput = {
  text: string;
  /** Where the text came from, after redirects: relative URIs resolve against it. */
  url: string;
  quality: Quality;
  /** `audio`: a master gives its audio rendition alone when it has one; `mute`: no audio rendition. Default `video`. */
  mode?: Mode;
  /** `any` for the URL the client gave; a track kind for a playlist a master pointed to. */
  expect: 'any' | Track['kind'];
  maxSegments: number;
};

/** A master's choice: the variant and the audio rendition to fetch, either of them null when not wanted (or not there). */
export type HlsReading =
  | { type: 'master'; variantUrl: string | null; variantKind: Track['kind']; audioUrl: string | null; subtitles: SubtitleOffer[] }
  | { type: 'media'; track: Track };

/** At most this many subtitle renditions are offered from one master. */
const MAX_SUBTITLE_RENDITIONS = 64;

/** Lines that are neither tags nor blank: segments of a media playlist, variants of a master. */
function uriLines(text: string): number {
  let count = 0;
  for (let start = 0; start < text.length;) {
    const end = text.indexOf('\n', start);
    const stop = end === -1 ? text.length : end;
    let first = start;
    while (first < stop && (text[first] === ' ' || text[first] === '\t' || text[first] === '\r')) first++;
    if (first < stop && text[first] !== '#') count++;
    start = stop + 1;
  }
  return count;
}

export function readHlsPlaylist(input: HlsReadInput): HlsReading {
  // Counted before parsing, so that a playlist of a million segments is refused before the parser
  // holds a million objects.
  const uris = uriLines(input.text);
  if (uris > input.maxSegments) {
    throw new DownloadError(
      'source_too_large',
      `The HLS playlist at ${input.url} lists ${uris} segments or variants, over the limit of ${input.maxSegments} (MAX_SEGMENTS).`,
    );
  }
  const playlist = parsePlaylist(input.text, input.url);
  if (!playlist.isMasterPlaylist) return { type: 'media', track: trackFromMediaPlaylist(playlist, input.url, input.expect === 'any' ? 'muxed' : input.expect) };
  if (input.expect !== 'any') {
    throw new DownloadError('unsupported_source', `The HLS variant at ${input.url} is another master playlist, not a media playlist.`);
  }
  // A session key announces the key system of every variant before any is fetched.
  for (const key of playlist.sessionKeyList) refuseDrm(key);
  const mode = input.mode ?? 'video';
  const variant = chooseVariant(playlist.variants, input.quality, mode);
  if (!variant) throw new DownloadError('unsupported_source', `The HLS master playlist at ${input.url} lists no variant streams.`);
  const audioUri = mode === 'mute' ? undefined : chooseAudioUri(variant);
  const audioUrl = audioUri ? resolveUri(audioUri, input.url) : null;
  // Audio alone: the rendition, without a video segment; else the variant, whatever it carries.
  // The variant's subtitle group (EXT-X-MEDIA TYPE=SUBTITLES), offered whatever the mode: a track is fetched only if asked for.
  const subtitles: SubtitleOffer[] = variant.subtitles
    .filter((rendition) => rendition.uri)
    .slice(0, MAX_SUBTITLE_RENDITIONS)
    .map((rendition) => ({ url: resolveUri(rendition.uri!, input.url), language: rendition.language ?? null, label: rendition.name || null, format: 'hls' }));
  if (mode === 'audio' && audioUrl) return { type: 'master', variantUrl: null, variantKind: 'video', audioUrl, subtitles };
  const variantKind = isAudioOnly(variant) ? 'audio' : audioUrl ? 'video' : 'muxed';
  return { type: 'master', variantUrl: resolveUri(variant.uri, input.url), variantKind, audioUrl, subtitles };
}

import { DownloadError } from '../../downloads/errors.ts';
import type { SourceHttp } from '../http.ts';
import type { MediaPlan, Quality, Track } from '../types.ts';
import { fetchPlaylist } from './fetch-playlist.ts';
import { refuseDrm } from './keys.ts';
import { trackFromMediaPlaylist } from './media-track.ts';
import { parsePlaylist } from './parse.ts';
import { resolveUri } from './urls.ts';
import { chooseAudioUri, chooseVariant } from './variants.ts';

/**
 * The tracks an HLS playlist resolves to. `url` is where `text` was fetched from (after redirects):
 * relative URIs resolve against it. A master playlist is narrowed to one variant by `quality`, plus
 * its audio rendition when the audio is a playlist of its own.
 */
export type HlsInput = { http: SourceHttp; url: string; text: string; quality: Quality; signal: AbortSignal };

export async function planHls(input: HlsInput): Promise<MediaPlan> {
  const playlist = parsePlaylist(input.text, input.url);
  if (!playlist.isMasterPlaylist) return { tracks: [trackFromMediaPlaylist(playlist, input.url, 'muxed')] };

  // A session key announces the key system of every variant before any is fetched.
  for (const key of playlist.sessionKeyList) refuseDrm(key);
  const variant = chooseVariant(playlist.variants, input.quality);
  if (!variant) throw new DownloadError('unsupported_source', `The HLS master playlist at ${input.url} lists no variant streams.`);
  const audioUri = chooseAudioUri(variant);
  const tracks = await Promise.all([
    loadTrack(input, resolveUri(variant.uri, input.url), audioUri ? 'video' : 'muxed'),
    ...(audioUri ? [loadTrack(input, resolveUri(audioUri, input.url), 'audio')] : []),
  ]);
  return { tracks };
}

async function loadTrack(input: HlsInput, url: string, kind: Track['kind']): Promise<Track> {
  const fetched = await fetchPlaylist(input.http, url, input.signal);
  const playlist = parsePlaylist(fetched.text, fetched.url);
  if (playlist.isMasterPlaylist) {
    throw new DownloadError('unsupported_source', `The HLS variant at ${fetched.url} is another master playlist, not a media playlist.`);
  }
  return trackFromMediaPlaylist(playlist, fetched.url, kind);
}

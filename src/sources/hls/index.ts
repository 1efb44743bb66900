import { DownloadError } from '../../downloads/errors.ts';
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
export async function planHls(input: { url: string; text: string; quality: Quality; signal: AbortSignal }): Promise<MediaPlan> {
  const playlist = parsePlaylist(input.text, input.url);
  if (!playlist.isMasterPlaylist) return { tracks: [trackFromMediaPlaylist(playlist, input.url, 'muxed')] };

  // A session key announces the key system of every variant before any is fetched.
  for (const key of playlist.sessionKeyList) refuseDrm(key);
  const variant = chooseVariant(playlist.variants, input.quality);
  if (!variant) throw new DownloadError('unsupported_source', `The HLS master playlist at ${input.url} lists no variant streams.`);
  const audioUri = chooseAudioUri(variant);
  const tracks = await Promise.all([
    loadTrack(resolveUri(variant.uri, input.url), audioUri ? 'video' : 'muxed', input.signal),
    ...(audioUri ? [loadTrack(resolveUri(audioUri, input.url), 'audio', input.signal)] : []),
  ]);
  return { tracks };
}

async function loadTrack(url: string, kind: Track['kind'], signal: AbortSignal): Promise<Track> {
  const fetched = await fetchPlaylist(url, signal);
  const playlist = parsePlaylist(fetched.text, fetched.url);
  if (playlist.isMasterPlaylist) {
    throw new DownloadError('unsupported_source', `The HLS variant at ${fetched.url} is another master playlist, not a media playlist.`);
  }
  return trackFromMediaPlaylist(playlist, fetched.url, kind);
}

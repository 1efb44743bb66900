import type { types } from 'hls-parser';
import { DownloadError } from '../../core/errors.ts';
import { segmentSeconds } from '../segment-seconds.ts';
import type { ByteRange, Segment, Track } from '../types.ts';
import { segmentKey } from './keys.ts';
import { resolveUri } from './urls.ts';

/** A media playlist as a track: its init section (if any) and its segments, all absolute. */
export function trackFromMediaPlaylist(playlist: types.MediaPlaylist, url: string, kind: Track['kind']): Track {
  if (playlist.segments.length === 0) throw new DownloadError('unsupported_source', `The HLS playlist at ${url} has no media segments.`);
  // Without EXT-X-ENDLIST segments may still be added; PLAYLIST-TYPE=VOD promises that none will.
  if (!playlist.endlist && playlist.playlistType !== 'VOD') {
    throw new DownloadError('unsupported_source', `The HLS playlist at ${url} is a live stream; live streams are not supported.`);
  }
  const init = planInit(playlist, url);
  const segments = playlist.segments.map((segment) => planSegment(segment, url));
  return init ? { kind, init, segments } : { kind, segments };
}

function planSegment(segment: types.Segment, playlistUrl: string): Segment {
  const planned: Segment = { url: resolveUri(segment.uri, playlistUrl) };
  const byteRange = plannedRange(segment.byterange, playlistUrl, segment.uri);
  if (byteRange) planned.byteRange = byteRange;
  const key = segmentKey(segment.key, segment.mediaSequenceNumber, playlistUrl);
  if (key) planned.key = key;
  // EXTINF: what a clip's segments are chosen by.
  const seconds = segmentSeconds(segment.duration);
  if (seconds !== undefined) planned.durationSeconds = seconds;
  return planned;
}

/** `defaultOffset` stands in for an offset the range left out and hls-parser could not infer. */
function plannedRange(range: types.Byterange | undefined, playlistUrl: string, uri: string, defaultOffset?: number): ByteRange | undefined {
  if (!range) return undefined;
  // hls-parser marks an offset it could not take from a previous range of the same URI with -1.
  const offset = range.offset >= 0 ? range.offset : defaultOffset;
  if (offset === undefined) {
    throw new DownloadError('unsupported_source', `The HLS playlist at ${playlistUrl} gives a byte range of ${uri} without the offset it starts at.`);
  }
  return { offset, length: range.length };
}

function sameInit(a: types.MediaInitializationSection, b: types.MediaInitializationSection): boolean {
  return a.uri === b.uri && a.byterange?.offset === b.byterange?.offset && a.byterange?.length === b.byterange?.length;
}

function planInit(playlist: types.MediaPlaylist, playlistUrl: string): Track['init'] {
  const segments = playlist.segments;
  const first = segments[0]?.map;
  if (segments.some((segment) => (segment.map && first ? !sameInit(segment.map, first) : segment.map !== first))) {
    throw new DownloadError(
      'unsupported_source',
      `The HLS playlist at ${playlistUrl} changes its initialization section (EXT-X-MAP) mid-stream, which is not supported.`,
    );
  }
  if (!first) return undefined;
  // The first segment declares the map. An EXT-X-KEY after the map in the same segment's tags
  // starts with the segment, but the init section stays under the key before it (RFC 8216 4.3.2.4).
  const keyOwner = keyFollowsFirstMap(playlist.source ?? '') ? undefined : segments[0];
  const init: NonNullable<Track['init']> = { url: resolveUri(first.uri, playlistUrl) };
  const byteRange = plannedRange(first.byterange, playlistUrl, first.uri, 0);
  if (byteRange) init.byteRange = byteRange;
  // The spec wants an explicit IV for an encrypted init section; without one, the sequence number
  // of the segment it comes with is what players fall back to.
  const key = segmentKey(keyOwner?.key, segments[0]!.mediaSequenceNumber, playlistUrl);
  if (key) init.key = key;
  return init;
}

/**
 * Whether the first segment's tags put an EXT-X-KEY after its EXT-X-MAP. hls-parser keeps a
 * segment's tags but not their order, so the order is read from the text.
 */
function keyFollowsFirstMap(source: string): boolean {
  let mapSeen = false;
  for (const raw of source.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#EXT-X-MAP:')) mapSeen = true;
    else if (line.startsWith('#EXT-X-KEY:') && mapSeen) return true;
    else if (line && !line.startsWith('#')) return false;
  }
  return false;
}

import type { ParsedByteRange, ParsedPlaylist, ParsedSegment } from 'mpd-parser';
import { DownloadError } from '../../core/errors.ts';
import { segmentSeconds } from '../segment-seconds.ts';
import type { ByteRange, Segment, Track } from '../types.ts';

// From one Representation as mpd-parser resolved it to a Track. Two cases come back without
// segments and are a single file fetched whole: a SegmentBase with an indexRange (mpd-parser would
// need the sidx fetched and parsed first, but the whole file already is the media in order), and a
// Representation with nothing but a BaseURL.

function toByteRange(range: ParsedByteRange | undefined): ByteRange | undefined {
  return range && { offset: Number(range.offset), length: Number(range.length) };
}

function toSegment(part: { resolvedUri: string; byterange?: ParsedByteRange }): Segment {
  const byteRange = toByteRange(part.byterange);
  return byteRange ? { url: part.resolvedUri, byteRange } : { url: part.resolvedUri };
}

/** mpd-parser gives every segment an init object, resolved to the BaseURL even when the MPD has none. */
function initOf(segment: ParsedSegment): Segment | undefined {
  const map = segment.map;
  return map && (map.uri || map.byterange) ? toSegment(map) : undefined;
}

/** A media segment, with the duration a clip chooses segments by when the MPD gives a believable one. */
function toMediaSegment(segment: ParsedSegment): Segment {
  const seconds = segmentSeconds(segment.duration);
  return seconds === undefined ? toSegment(segment) : { ...toSegment(segment), durationSeconds: seconds };
}

const sameSegment = (a: Segment | undefined, b: Segment | undefined) => JSON.stringify(a) === JSON.stringify(b);

export function toTrack(kind: Track['kind'], playlist: ParsedPlaylist, manifestUrl: string): Track {
  const id = playlist.attributes.NAME;
  const parsed = playlist.segments;
  if (parsed === undefined || (parsed.length === 0 && playlist.sidx)) {
    // Without a BaseURL of its own the Representation resolves to the MPD, which is no media.
    if (playlist.resolvedUri === manifestUrl) {
      throw new DownloadError('unsupported_source', `DASH Representation "${id}" has neither segments nor a media URL.`);
    }
    return { kind, segments: [{ url: playlist.resolvedUri }] };
  }
  const [first] = parsed;
  if (!first) throw new DownloadError('unsupported_source', `DASH Representation "${id}" lists no segments.`);

  const init = initOf(first);
  // mpd-parser joins the Periods of a Representation into one list; a Track has one init section.
  if (!parsed.every((segment) => sameSegment(initOf(segment), init))) {
    throw new DownloadError('unsupported_source', `DASH Representation "${id}" changes its initialization segment between Periods; that is not supported.`);
  }
  const segments = parsed.map(toMediaSegment);
  // A SegmentBase without an index: its init range lies inside the file that is fetched whole anyway.
  const initInsideSegment = init && segments.some((segment) => segment.url === init.url && !segment.byteRange);
  return init && !initInsideSegment ? { kind, init, segments } : { kind, segments };
}

import { DownloadError } from '../../core/errors.ts';

// The TTML documents in a media segment of an `stpp` track (ISO 14496-30): fragmented MP4 whose
// every sample, in `mdat`, is one whole TTML document covering that segment's span.
//
// Samples are cut by the sizes in moof/traf/trun (or tfhd's default size), read in order from the
// start of the mdat that follows the moof, which is where packagers put them (trun's data_offset
// is not followed). An mdat with no moof before it, or after one whose sizes cannot be had, is
// one document. A box that is malformed or runs past the end of the segment ends the walk: the
// documents before it are returned.
//
// Times: ISO 14496-30 puts a sample's TTML times on the track's timeline, which for DASH is the
// presentation's, and that is how ttmlToCues reads them: cues from successive segments can be
// joined as they are (a cue across a segment boundary comes out of both documents, usually cut at
// it; merging the halves is left to the caller). A packager that restarts its documents' times at
// each segment is not recognised here: that needs tfdt's decode time and the timescale from the
// init segment, which this function does not see.

export const MAX_SEGMENT_BYTES = 64 * 1024 * 1024;
export const MAX_SAMPLES = 10_000;

type Box = { type: string; payload: number; end: number };

/** The boxes in [from, to), in order, until one is malformed or runs past `to`. */
function* boxes(data: Buffer, from: number, to: number): Generator<Box> {
  let at = from;
  while (to - at >= 8) {
    let size = data.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      if (to - at < 16) return;
      const large = data.readBigUInt64BE(at + 8);
      if (large > BigInt(to - at)) return;
      size = Number(large);
      header = 16;
    } else if (size === 0) {
      size = to - at; // to the end of the file
    }
    const type = data.toString('latin1', at + 4, at + 8);
    if (type === 'uuid') header += 16;
    if (size < header || size > to - at) return;
    yield { type, payload: at + header, end: at + size };
    at += size;
  }
}

/** tfhd's default-sample-size, or null when it gives none. */
function defaultSampleSize(data: Buffer, tfhd: Box): number | null {
  if (tfhd.end - tfhd.payload < 8) return null;
  const flags = data.readUInt32BE(tfhd.payload) & 0xffffff;
  // track_ID, then base-data-offset (8), sample-description-index (4), default-sample-duration (4).
  const at = tfhd.payload + 8 + (flags & 0x1 ? 8 : 0) + (flags & 0x2 ? 4 : 0) + (flags & 0x8 ? 4 : 0);
  return flags & 0x10 && at + 4 <= tfhd.end ? data.readUInt32BE(at) : null;
}

/** The sizes of a trun's samples; null when it gives none and there is no default, or it is malformed. */
function runSizes(data: Buffer, trun: Box, fallback: number | null, budget: number): number[] | null {
  if (trun.end - trun.payload < 8) return null;
  const flags = data.readUInt32BE(trun.payload) & 0xffffff;
  const count = data.readUInt32BE(trun.payload + 4);
  // data-offset and first-sample-flags, then per sample: duration, size, flags, composition offset.
  const first = trun.payload + 8 + (flags & 0x1 ? 4 : 0) + (flags & 0x4 ? 4 : 0);
  const fields = [0x100, 0x200, 0x400, 0x800].filter((bit) => flags & bit).length;
  if (first + count * fields * 4 > trun.end) return null;
  if (count > budget) throw new DownloadError('source_too_large', `The subtitle segment holds more than ${MAX_SAMPLES} samples.`);
  if (!(flags & 0x200)) return fallback === null ? null : new Array<number>(count).fill(fallback);
  const sizeAt = first + (flags & 0x100 ? 4 : 0);
  return Array.from({ length: count }, (_, index) => data.readUInt32BE(sizeAt + index * fields * 4));
}

/** The sizes of the samples a moof describes, or null when it does not give them all. */
function moofSizes(data: Buffer, moof: Box, budget: number): number[] | null {
  const sizes: number[] = [];
  for (const traf of boxes(data, moof.payload, moof.end)) {
    if (traf.type !== 'traf') continue;
    let fallback: number | null = null;
    for (const box of boxes(data, traf.payload, traf.end)) {
      if (box.type === 'tfhd') fallback = defaultSampleSize(data, box);
      if (box.type !== 'trun') continue;
      const run = runSizes(data, box, fallback, budget - sizes.length);
      if (run === null) return null;
      for (const size of run) sizes.push(size);
    }
  }
  return sizes.length > 0 ? sizes : null;
}

const utf8 = new TextDecoder('utf-8');

/** A sample as text: UTF-8 (a byte order mark dropped, bad bytes replaced), without the NUL padding some packagers add. */
function decode(data: Buffer, start: number, end: number): string {
  while (end > start && data[end - 1] === 0) end--;
  return utf8.decode(data.subarray(start, end));
}

/** The samples of an stpp media segment's mdat boxes as text, in order; throws a DownloadError for one too large. */
export function stppDocuments(segment: Buffer): string[] {
  if (segment.length > MAX_SEGMENT_BYTES) throw new DownloadError('source_too_large', `The subtitle segment is larger than ${MAX_SEGMENT_BYTES} bytes.`);
  const documents: string[] = [];
  let sizes: number[] | null = null;
  for (const box of boxes(segment, 0, segment.length)) {
    if (box.type === 'moof') sizes = moofSizes(segment, box, MAX_SAMPLES - documents.length);
    if (box.type !== 'mdat') continue;
    let at = box.payload;
    for (const size of sizes ?? [box.end - box.payload]) {
      if (size > box.end - at) break;
      if (size > 0 && documents.length >= MAX_SAMPLES)
        throw new DownloadError('source_too_large', `The subtitle segment holds more than ${MAX_SAMPLES} samples.`);
      if (size > 0) documents.push(decode(segment, at, at + size));
      at += size;
    }
    sizes = null;
  }
  return documents;
}

import type { Clip } from '../core/clip.ts';
import { asParent, child, chunksOf, entryCount, IndexFault, tracksOf, type ByteSpan, type Track } from './mp4-index.ts';

// Which bytes of an MP4-family file a clip of it needs, read from its index (the payload of its
// `moov`) alone: for each track, the samples from where ffmpeg's `-ss` starts it to a little past
// the clip's end. ffmpeg seeks its default stream (the first video track, else the first audio
// one) to its sync sample at or before the start, and every other track to its sample at or before
// that sample's time; a file holding those samples (and its box headers and index) at their places,
// with nothing in between, is cut exactly as the whole file would be.
//
// The index is as hostile here as in mp4-index.ts: every table is checked to fit its box before it
// is read, nothing is allocated by a count, and each table is walked once per question.

/** Spans less than this apart are fetched as one: a request costs more than the bytes between. */
export const JOIN_GAP_BYTES = 256 * 1024;
/** A clip that would take more ranges than this (a file whose tracks' chunks are scattered) is not fetched in ranges. */
export const MAX_CLIP_SPANS = 4096;
/** Samples fetched beyond the ones the cut keeps, on either side: ffmpeg reads a packet ahead, and its times round. */
const MARGIN_SAMPLES = 2;
/** Edits of an edit list looked at: the empty ones before the first that shows the media. */
const MAX_EDITS = 8;

/** What a clip of the file needs: its spans (sorted, disjoint), where the cut will start, and how long the file lasts. */
export type ClipSpans = { spans: ByteSpan[]; keptFromSeconds: number; durationSeconds: number };

/** A track's clock: decoding times from `stts`, sync samples from `stss`, and where its edit list puts time zero. */
type Timing = {
  track: Track;
  handler: string;
  timescale: number;
  /** The media time shown at the presentation's `leadSeconds`. */
  mediaZero: number;
  leadSeconds: number;
  stts: { base: number; count: number };
  /** Null when every sample is a sync sample. */
  stss: { base: number; count: number } | null;
};

/**
 * The spans of the file that `clip` needs, from the `moov` payload `moov`. Throws IndexFault when
 * the index cannot be read so (its tables cut short, no timing, absurd times, or too many spans);
 * the caller then fetches the whole file. A clip past the end is the caller's to refuse, by
 * `durationSeconds`, before the spans are fetched.
 */
export function clipSpans(moov: Buffer, clip: Clip): ClipSpans {
  const movie = movieHeader(moov);
  const tracks = tracksOf(moov);
  for (const track of tracks) checkChunks(track);
  const timings = tracks.map((track) => timingOf(moov, track, movie.timescale));
  const lead = timings.find((t) => t.handler === 'vide') ?? timings.find((t) => t.handler === 'soun') ?? timings[0];
  if (!lead) throw new IndexFault('its index names no samples');
  // ffmpeg counts a clip's times from the media's start: where its earliest track starts, after the empty edits that delay every track.
  const origin = Math.min(...timings.map((timing) => timing.leadSeconds));
  const key = syncAtOrBefore(moov, lead, sampleAtOrBefore(moov, lead, origin + clip.startSeconds));
  const keptAt = Math.max(origin, secondsOf(lead, decodingTime(moov, lead, key)));
  const spans: ByteSpan[] = [];
  for (const timing of timings) {
    const count = timing.track.sizes.count;
    const first = timing === lead ? key : Math.max(0, syncAtOrBefore(moov, timing, sampleAtOrBefore(moov, timing, keptAt)) - MARGIN_SAMPLES);
    const last = clip.endSeconds === null ? count - 1 : Math.min(count - 1, sampleAtOrBefore(moov, timing, origin + clip.endSeconds) + MARGIN_SAMPLES);
    for (const span of sampleSpans(timing.track, first, last)) spans.push(span);
    if (spans.length > MAX_CLIP_SPANS) throw new IndexFault(`a clip of it would take more than ${MAX_CLIP_SPANS} ranges`);
  }
  return { spans: joined(spans), keptFromSeconds: keptAt - origin, durationSeconds: movie.durationSeconds - origin };
}

/** The movie's timescale and duration, from `mvhd`. */
function movieHeader(moov: Buffer): { timescale: number; durationSeconds: number } {
  const mvhd = child(moov, asParent(moov, 'moov'), 'mvhd');
  if (!mvhd) throw new IndexFault('its index has no mvhd box');
  const long = moov.readUInt8(mvhd.body) === 1;
  const at = mvhd.body + (long ? 20 : 12);
  if (mvhd.end < at + (long ? 12 : 8)) throw new IndexFault('its mvhd box is cut short');
  const timescale = moov.readUInt32BE(at);
  const duration = long ? Number(moov.readBigUInt64BE(at + 4)) : moov.readUInt32BE(at + 4);
  // All ones is "unknown" (a fragmented file's); zero says nothing either.
  const unknown = long ? duration >= Number.MAX_SAFE_INTEGER : duration === 0xffffffff;
  if (timescale === 0 || duration === 0 || unknown) throw new IndexFault('its mvhd box gives no duration');
  return { timescale, durationSeconds: duration / timescale };
}

/**
 * Whether the track's chunk tables say one thing only: stsc's runs in order from chunk 1, each of
 * samples, and its chunks holding stsz's samples exactly. ffmpeg mends a table that does not in its
 * own way, which would put samples at other bytes than the ones computed here.
 */
function checkChunks(track: Track): void {
  const { chunks, sizes } = track;
  for (let entry = 0; entry < chunks.count; entry++) {
    const first = chunks.firstChunk(entry);
    if ((entry === 0 ? first !== 1 : first <= chunks.firstChunk(entry - 1)) || chunks.samplesPerChunk(entry) === 0) {
      throw new IndexFault(`track ${track.number}'s stsc box is out of order`);
    }
  }
  let covered = 0;
  for (const chunk of chunksOf(track)) covered = chunk.firstSample + chunk.samples;
  if (covered !== sizes.count) throw new IndexFault(`track ${track.number}'s chunks hold ${covered} of its ${sizes.count} samples`);
}

function timingOf(moov: Buffer, track: Track, movieTimescale: number): Timing {
  const mdia = child(moov, track.trak, 'mdia')!;
  const mdhd = child(moov, mdia, 'mdhd');
  if (!mdhd) throw new IndexFault(`track ${track.number} has no mdhd box`);
  const at = mdhd.body + (moov.readUInt8(mdhd.body) === 1 ? 20 : 12);
  if (mdhd.end < at + 4) throw new IndexFault(`track ${track.number}'s mdhd box is cut short`);
  const timescale = moov.readUInt32BE(at);
  if (timescale === 0) throw new IndexFault(`track ${track.number} has a timescale of 0`);
  const hdlr = child(moov, mdia, 'hdlr');
  const handler = hdlr && hdlr.end >= hdlr.body + 12 ? moov.toString('latin1', hdlr.body + 8, hdlr.body + 12) : '';
  const stts = child(moov, track.stbl, 'stts');
  if (!stts) throw new IndexFault(`track ${track.number} has no stts box`);
  const stss = child(moov, track.stbl, 'stss');
  const timing = {
    track,
    handler,
    timescale,
    ...editOf(moov, track, movieTimescale),
    stts: { base: stts.body + 8, count: entryCount(moov, stts, 0, 64, 'stts') },
    stss: stss && { base: stss.body + 8, count: entryCount(moov, stss, 0, 32, 'stss') },
  };
  checkDurations(moov, timing);
  return timing;
}

/**
 * ffmpeg reads a duration as a signed number and mends a table whose samples do not add up to
 * stsz's, each in its own way: such a table would put its samples at other times than the ones
 * computed here, so it is not read at all.
 */
function checkDurations(moov: Buffer, timing: Timing): void {
  let samples = 0;
  for (let entry = 0; entry < timing.stts.count; entry++) {
    samples += moov.readUInt32BE(timing.stts.base + entry * 8);
    if (moov.readUInt32BE(timing.stts.base + entry * 8 + 4) > 0x7fffffff) throw new IndexFault(`track ${timing.track.number} has a negative sample duration`);
  }
  if (samples !== timing.track.sizes.count) {
    throw new IndexFault(`track ${timing.track.number} times ${samples} samples but sizes ${timing.track.sizes.count}`);
  }
}

/**
 * Where the track's edit list starts it: empty edits first delay it, the one after them names the
 * media time shown then. A list that goes on after that edit (cuts within the media, or a rate
 * other than 1) is one ffmpeg plays in ways not followed here: it is not read.
 */
function editOf(moov: Buffer, track: Track, movieTimescale: number): { mediaZero: number; leadSeconds: number } {
  const edts = child(moov, track.trak, 'edts');
  const elst = edts && child(moov, edts, 'elst');
  if (!elst) return { mediaZero: 0, leadSeconds: 0 };
  if (elst.end - elst.body < 8) throw new IndexFault(`track ${track.number}'s elst box is cut short`);
  const long = moov.readUInt8(elst.body) === 1;
  const entryBytes = long ? 20 : 12;
  const count = entryCount(moov, elst, 0, entryBytes * 8, 'elst');
  let leadSeconds = 0;
  for (let entry = 0; entry < Math.min(count, MAX_EDITS); entry++) {
    const at = elst.body + 8 + entry * entryBytes;
    const duration = long ? Number(moov.readBigUInt64BE(at)) : moov.readUInt32BE(at);
    const mediaTime = long ? Number(moov.readBigInt64BE(at + 8)) : moov.readInt32BE(at + 4);
    const rate = moov.readUInt32BE(at + (long ? 16 : 8));
    if (mediaTime >= 0) {
      if (entry !== count - 1 || rate !== 0x10000) throw new IndexFault(`track ${track.number}'s edit list does more than start it`);
      return { mediaZero: mediaTime, leadSeconds };
    }
    leadSeconds += duration / movieTimescale;
  }
  throw new IndexFault(`track ${track.number}'s edit list shows none of its media`);
}

function secondsOf(timing: Timing, ticks: number): number {
  return (ticks - timing.mediaZero) / timing.timescale + timing.leadSeconds;
}

/** The last sample decoded at or before `seconds` (the first when none is), within stsz's count. */
function sampleAtOrBefore(moov: Buffer, timing: Timing, seconds: number): number {
  const ticks = (seconds - timing.leadSeconds) * timing.timescale + timing.mediaZero;
  let [first, time, found] = [0, 0, 0];
  for (let entry = 0; entry < timing.stts.count && time <= ticks; entry++) {
    const count = moov.readUInt32BE(timing.stts.base + entry * 8);
    const delta = moov.readUInt32BE(timing.stts.base + entry * 8 + 4);
    if (count === 0) continue;
    found = first + (delta === 0 ? count - 1 : Math.min(count - 1, Math.floor((ticks - time) / delta)));
    first += count;
    time += count * delta;
    if (time > Number.MAX_SAFE_INTEGER) throw new IndexFault(`track ${timing.track.number}'s stts box runs past any real duration`);
  }
  return Math.min(found, timing.track.sizes.count - 1);
}

/** When `sample` is decoded, in the track's ticks. */
function decodingTime(moov: Buffer, timing: Timing, sample: number): number {
  let [first, time] = [0, 0];
  for (let entry = 0; entry < timing.stts.count; entry++) {
    const count = moov.readUInt32BE(timing.stts.base + entry * 8);
    const delta = moov.readUInt32BE(timing.stts.base + entry * 8 + 4);
    if (sample < first + count) return time + (sample - first) * delta;
    first += count;
    time += count * delta;
  }
  return time;
}

/** The last sync sample at or before `sample` (the first sample when none is); `sample` itself in a track whose every sample is one. */
function syncAtOrBefore(moov: Buffer, timing: Timing, sample: number): number {
  if (!timing.stss) return sample;
  let found = 0;
  // Read whole, in whatever order the box lists them: a table out of order costs nothing more.
  for (let entry = 0; entry < timing.stss.count; entry++) {
    const sync = moov.readUInt32BE(timing.stss.base + entry * 4) - 1;
    if (sync <= sample && sync > found) found = sync;
  }
  return found;
}

/** The byte spans of samples [first, last] of `track`, one per chunk they lie in, those close together joined. */
function sampleSpans(track: Track, first: number, last: number): ByteSpan[] {
  const spans: ByteSpan[] = [];
  for (const chunk of chunksOf(track)) {
    const end = chunk.firstSample + chunk.samples;
    if (end <= first) continue;
    if (chunk.firstSample > last) break;
    const from = Math.max(first, chunk.firstSample);
    const to = Math.min(last + 1, end);
    const start = track.offsets.at(chunk.chunk) + track.sizes.bytes(chunk.firstSample, from - chunk.firstSample);
    const bytes = track.sizes.bytes(from, to - from);
    if (bytes === 0) continue;
    const previous = spans.at(-1);
    if (previous && start >= previous.start && start <= previous.end + JOIN_GAP_BYTES) previous.end = Math.max(previous.end, start + bytes);
    else spans.push({ start, end: start + bytes });
    if (spans.length > MAX_CLIP_SPANS) throw new IndexFault(`a clip of it would take more than ${MAX_CLIP_SPANS} ranges`);
  }
  return spans;
}

/** `spans` sorted, and those that overlap or lie less than JOIN_GAP_BYTES apart made one. */
function joined(spans: ByteSpan[]): ByteSpan[] {
  const merged: ByteSpan[] = [];
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    const previous = merged.at(-1);
    if (previous && span.start <= previous.end + JOIN_GAP_BYTES) previous.end = Math.max(previous.end, span.end);
    else merged.push({ ...span });
  }
  return merged;
}

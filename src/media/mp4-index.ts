import { open, type FileHandle } from 'node:fs/promises';

// Whether an MP4-family file (MP4, MOV, M4A, 3GP) holds every byte its index points to. ffmpeg
// reads a file cut after its `moov` (a fast-start file whose transfer ended early) without a
// complaint: its index is all there, and the samples it names past the cut are only missed when
// played. So the index is read here: every chunk its sample tables name, from `stsc`, `stsz` (or
// `stz2`) and `stco` (or `co64`), must lie inside the payload of an `mdat` and inside the file.
//
// Only box headers and the `moov` are read, at their offsets, never the media itself. Every byte is
// taken as hostile: no count is trusted beyond the bytes that hold its entries, nothing is
// allocated by a count, each loop moves forward by at least a box header, and the walk goes down
// one fixed path (moov/trak/mdia/minf/stbl), never deeper. Structure is read as leniently as
// ffmpeg reads it (a child box running past its parent ends with it; a header too small to be one
// ends its parent); a sample table whose entries are not all there is a fault. A fragmented file's
// samples are in its fragments, which are not looked at: its `moov` names none, so nothing is
// checked, and what it lacks is left to ffmpeg, as is a file with no `moov` at all.

/** A `moov` larger than this is not read (a day of 60 fps video indexes in about 25 MiB). */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;
/** Boxes at the top level walked at most: a whole file has a handful; a fragmented one, two per fragment. */
export const MAX_TOP_LEVEL_BOXES = 100_000;
/** Top-level box headers are read out of windows of this size, so that many small boxes cost few reads. */
const WINDOW_BYTES = 64 * 1024;

/** A span of the file, [start, end). */
export type ByteSpan = { start: number; end: number };

type Header = { type: string; headerBytes: number; /** The declared size; null for "to the end" (size 0). */ size: number | null };

/**
 * The header of the box at `at` in `bytes` (of which `limit` may be read), or null when there is no
 * box header there: fewer than 8 bytes, a 64-bit size that is cut off, or a size smaller than the
 * header itself (which would never move a reader forward).
 */
export function headerAt(bytes: Buffer, at: number, limit: number): Header | null {
  if (limit - at < 8) return null;
  const size32 = bytes.readUInt32BE(at);
  const type = bytes.toString('latin1', at + 4, at + 8);
  if (size32 === 0) return { type, headerBytes: 8, size: null };
  if (size32 !== 1) return size32 < 8 ? null : { type, headerBytes: 8, size: size32 };
  if (limit - at < 16) return null;
  // Past 2^53 the size is rounded, which still puts its end past any real file.
  const size = Number(bytes.readBigUInt64BE(at + 8));
  return size < 16 ? null : { type, headerBytes: 16, size };
}

type Child = { type: string; body: number; end: number };

/** The boxes inside [start, end) of `bytes`, each cut at `end`: ffmpeg reads a child that overruns its parent the same way. */
function* children(bytes: Buffer, start: number, end: number): Generator<Child> {
  let at = start;
  for (;;) {
    const header = headerAt(bytes, at, end);
    if (!header) return;
    const boxEnd = header.size === null ? end : at + header.size;
    yield { type: header.type, body: at + header.headerBytes, end: Math.min(boxEnd, end) };
    at = boxEnd;
  }
}

export function child(bytes: Buffer, parent: Child, type: string): Child | null {
  for (const box of children(bytes, parent.body, parent.end)) if (box.type === type) return box;
  return null;
}

/** A fault in the index: why the file cannot be whole (or read). */
export class IndexFault extends Error {}

/** The entry count of the full box `box` (after its version and flags), checked to fit the box with `entryBytes` for each and `before` bytes before them. */
export function entryCount(bytes: Buffer, box: Child, before: number, entryBits: number, what: string): number {
  const first = box.body + 4 + before;
  if (box.end - first < 4) throw new IndexFault(`its ${what} box is cut short`);
  const count = bytes.readUInt32BE(first);
  const room = Math.floor(((box.end - first - 4) * 8) / entryBits);
  if (count > room) throw new IndexFault(`its ${what} box claims ${count} entries but has room for ${room}`);
  return count;
}

type ChunkOffsets = { count: number; at(chunk: number): number };
type SampleToChunk = { count: number; firstChunk(entry: number): number; samplesPerChunk(entry: number): number };
type SampleSizes = { count: number; bytes(from: number, samples: number): number };

function chunkOffsets(bytes: Buffer, stbl: Child): ChunkOffsets | null {
  const stco = child(bytes, stbl, 'stco');
  if (stco) {
    const base = stco.body + 8;
    return { count: entryCount(bytes, stco, 0, 32, 'stco'), at: (chunk) => bytes.readUInt32BE(base + chunk * 4) };
  }
  const co64 = child(bytes, stbl, 'co64');
  if (co64) {
    const base = co64.body + 8;
    return { count: entryCount(bytes, co64, 0, 64, 'co64'), at: (chunk) => Number(bytes.readBigUInt64BE(base + chunk * 8)) };
  }
  return null;
}

function sampleToChunk(bytes: Buffer, stbl: Child): SampleToChunk | null {
  const stsc = child(bytes, stbl, 'stsc');
  if (!stsc) return null;
  const base = stsc.body + 8;
  return {
    count: entryCount(bytes, stsc, 0, 96, 'stsc'),
    firstChunk: (entry) => bytes.readUInt32BE(base + entry * 12),
    samplesPerChunk: (entry) => bytes.readUInt32BE(base + entry * 12 + 4),
  };
}

function sampleSizes(bytes: Buffer, stbl: Child): SampleSizes | null {
  const stsz = child(bytes, stbl, 'stsz');
  if (stsz) {
    if (stsz.end - stsz.body < 12) throw new IndexFault('its stsz box is cut short');
    const constant = bytes.readUInt32BE(stsz.body + 4);
    if (constant !== 0) return { count: bytes.readUInt32BE(stsz.body + 8), bytes: (_from, samples) => samples * constant };
    const base = stsz.body + 12;
    return { count: entryCount(bytes, stsz, 4, 32, 'stsz'), bytes: (from, samples) => sum(samples, (i) => bytes.readUInt32BE(base + (from + i) * 4)) };
  }
  const stz2 = child(bytes, stbl, 'stz2');
  if (!stz2) return null;
  if (stz2.end - stz2.body < 12) throw new IndexFault('its stz2 box is cut short');
  const fieldBits = bytes.readUInt8(stz2.body + 7);
  if (fieldBits !== 4 && fieldBits !== 8 && fieldBits !== 16) throw new IndexFault(`its stz2 box has sizes of ${fieldBits} bits`);
  const base = stz2.body + 12;
  const count = entryCount(bytes, stz2, 4, fieldBits, 'stz2');
  const size = (sample: number): number => {
    if (fieldBits === 16) return bytes.readUInt16BE(base + sample * 2);
    if (fieldBits === 8) return bytes.readUInt8(base + sample);
    const byte = bytes.readUInt8(base + (sample >> 1));
    return sample % 2 === 0 ? byte >> 4 : byte & 0x0f;
  };
  return { count, bytes: (from, samples) => sum(samples, (i) => size(from + i)) };
}

function sum(count: number, term: (i: number) => number): number {
  let total = 0;
  for (let i = 0; i < count; i++) total += term(i);
  return total;
}

/** A track's sample tables; `trak` and `stbl` for whoever reads more of it (its timing: mp4-clip.ts). */
export type Track = { number: number; trak: Child; stbl: Child; offsets: ChunkOffsets; chunks: SampleToChunk; sizes: SampleSizes };

/** The tracks of a `moov` (its payload) that name sample data: a track without its tables (a fragmented file's) names none. */
export function tracksOf(moov: Buffer): Track[] {
  const tracks: Track[] = [];
  let number = 0;
  for (const trak of children(moov, 0, moov.length)) {
    if (trak.type !== 'trak') continue;
    number++;
    const mdia = child(moov, trak, 'mdia');
    const minf = mdia && child(moov, mdia, 'minf');
    const stbl = minf && child(moov, minf, 'stbl');
    if (!stbl) continue;
    const offsets = chunkOffsets(moov, stbl);
    const chunks = sampleToChunk(moov, stbl);
    const sizes = sampleSizes(moov, stbl);
    if (offsets && chunks && sizes && offsets.count > 0 && sizes.count > 0) tracks.push({ number, trak, stbl, offsets, chunks, sizes });
  }
  return tracks;
}

/** The span of `spans` (in file order, not overlapping) that starts at or before `at`, or null. */
function spanAt(spans: readonly ByteSpan[], at: number): ByteSpan | null {
  let low = 0;
  let high = spans.length - 1;
  let found: ByteSpan | null = null;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (spans[middle]!.start <= at) {
      found = spans[middle]!;
      low = middle + 1;
    } else high = middle - 1;
  }
  return found;
}

/** A chunk of a track: its index in the chunk table, and the samples it holds, [firstSample, firstSample + samples). */
type ChunkSamples = { chunk: number; firstSample: number; samples: number };

/**
 * The track's chunks in table order, each with the samples stsc gives it (none past stsz's count).
 * Each chunk is looked at once and each stsc entry passed once: bounded by the boxes' sizes.
 */
export function* chunksOf(track: Track): Generator<ChunkSamples> {
  const { offsets, chunks, sizes } = track;
  let sample = 0;
  let entry = 0;
  for (let chunk = 0; chunk < offsets.count && sample < sizes.count; chunk++) {
    while (entry + 1 < chunks.count && chunks.firstChunk(entry + 1) <= chunk + 1) entry++;
    const perChunk = chunks.count > 0 && chunks.firstChunk(entry) <= chunk + 1 ? chunks.samplesPerChunk(entry) : 0;
    const samples = Math.min(perChunk, sizes.count - sample);
    yield { chunk, firstSample: sample, samples };
    sample += samples;
  }
}

/** Why `track`'s chunks are not all inside `mdats` and the file, or null when they are. */
function trackFault(track: Track, mdats: readonly ByteSpan[], fileBytes: number): string | null {
  for (const { chunk, firstSample, samples } of chunksOf(track)) {
    const bytes = track.sizes.bytes(firstSample, samples);
    if (bytes === 0) continue;
    const start = track.offsets.at(chunk);
    const end = start + bytes;
    const where = () => `track ${track.number} has ${bytes} bytes of samples at byte ${start}`;
    if (end > fileBytes) return `${where()}, past the end of the ${fileBytes}-byte file`;
    const mdat = spanAt(mdats, start);
    if (!mdat || end > mdat.end) return `${where()}, outside its media data (mdat)`;
  }
  return null;
}

/**
 * Why the samples that the `moov` payload `moov` names are not all in the file: null when every
 * chunk lies inside one of `mdats` (the payloads of the file's `mdat` boxes, in file order, each
 * cut at the file's end) and inside the file's `fileBytes`.
 */
export function indexFault(moov: Buffer, mdats: readonly ByteSpan[], fileBytes: number): string | null {
  try {
    for (const track of tracksOf(moov)) {
      const fault = trackFault(track, mdats, fileBytes);
      if (fault) return fault;
    }
    return null;
  } catch (error) {
    if (error instanceof IndexFault) return error.message;
    throw error;
  }
}

/** Whether the `moov` payload `moov` is readable and names no sample data (a fragmented file's). */
function namesNoSamples(moov: Buffer): boolean {
  try {
    return tracksOf(moov).length === 0;
  } catch (error) {
    if (error instanceof IndexFault) return false;
    throw error;
  }
}

/** Reads box headers of a file, a window at a time. */
class HeaderReader {
  private readonly window = Buffer.alloc(WINDOW_BYTES);
  private start = 0;
  private length = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly fileBytes: number,
  ) {}

  async headerAt(at: number): Promise<Header | null> {
    if (at < this.start || at + 16 > this.start + this.length) {
      const { bytesRead } = await this.handle.read(this.window, 0, Math.min(WINDOW_BYTES, this.fileBytes - at), at);
      this.start = at;
      this.length = bytesRead;
    }
    return headerAt(this.window, at - this.start, this.length);
  }

  async bytes(at: number, count: number): Promise<Buffer> {
    const bytes = Buffer.alloc(count);
    let read = 0;
    while (read < count) {
      const { bytesRead } = await this.handle.read(bytes, read, count - read, at + read);
      if (bytesRead === 0) return bytes.subarray(0, read);
      read += bytesRead;
    }
    return bytes;
  }
}

/**
 * Why the MP4-family file `file` cannot be whole: its index names sample data outside its `mdat`
 * boxes or past its end (a transfer cut after the index), its sample tables are cut short, or it
 * is too odd to be checked (an index over MAX_INDEX_BYTES, more than MAX_TOP_LEVEL_BOXES boxes).
 * Null when its index is all there and points only into its media data, and when it has no index
 * this can read (no `moov` in the boxes before one that is no box): ffmpeg then has its say.
 */
export async function mp4IndexFault(file: string): Promise<string | null> {
  const handle = await open(file, 'r');
  try {
    const fileBytes = (await handle.stat()).size;
    const reader = new HeaderReader(handle, fileBytes);
    const mdats: ByteSpan[] = [];
    let moov: Buffer | null = null;
    let at = 0;
    for (let boxes = 0; ; boxes++) {
      const header = at < fileBytes ? await reader.headerAt(at) : null;
      if (!header) break;
      if (boxes === MAX_TOP_LEVEL_BOXES) return `it has more than ${MAX_TOP_LEVEL_BOXES} boxes at its top level`;
      const end = header.size === null ? fileBytes : at + header.size;
      const body = { start: at + header.headerBytes, end: Math.min(end, fileBytes) };
      if (header.type === 'mdat') mdats.push(body);
      else if (header.type === 'moov' && !moov) {
        if (end - body.start > MAX_INDEX_BYTES)
          return `its index (moov) of ${end - body.start} bytes is more than the ${MAX_INDEX_BYTES} bytes the service reads of one`;
        moov = await reader.bytes(body.start, Math.max(0, body.end - body.start));
        // A fragmented file's index names no samples: nothing to check, and no need to walk its fragments.
        if (namesNoSamples(moov)) return null;
      }
      at = end;
    }
    return moov ? indexFault(moov, mdats, fileBytes) : null;
  } finally {
    await handle.close();
  }
}

/**
 * Whether the first `available` bytes of the MP4-family file `file` hold its whole index (a `moov`
 * that names samples) before any of its media (`mdat`, or a fragment): true when they do, false
 * when media comes first or the file is fragmented or odd, null while more bytes could still tell.
 */
export async function indexAhead(file: string, available: number): Promise<boolean | null> {
  const handle = await open(file, 'r');
  try {
    const reader = new HeaderReader(handle, available);
    let at = 0;
    for (let boxes = 0; boxes < MAX_TOP_LEVEL_BOXES; boxes++) {
      const header = at < available ? await reader.headerAt(at) : null;
      // A header not there yet, or one that is no box (which `available` more bytes cannot mend past MAX_INDEX_BYTES).
      if (!header) return available - at < 16 && at < MAX_INDEX_BYTES ? null : false;
      if (header.size === null || header.type === 'mdat' || header.type === 'moof') return false;
      const end = at + header.size;
      if (header.type === 'moov') {
        if (header.size - header.headerBytes > MAX_INDEX_BYTES) return false;
        if (end > available) return null;
        return !namesNoSamples(await reader.bytes(at + header.headerBytes, header.size - header.headerBytes));
      }
      at = end;
    }
    return false;
  } finally {
    await handle.close();
  }
}

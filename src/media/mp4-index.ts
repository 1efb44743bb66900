import { open, type FileHandle } from 'node:fs/promises';

// Whether an MP4-family file (MP4, MOV, M4A, 3GP) holds every byte its index points to, in boxes
// that fit one another. ffmpeg reads a file cut after its `moov` (a fast-start file whose transfer
// ended early), a fragmented file cut inside its last `mdat`, a file whose `mdat` claims more bytes
// than there are, or one whose first `trak` swallows the next (dropping a track), with at most a
// line of complaint: the samples it misses are only missed when played. So the index is read here:
// every chunk its sample tables name, from `stsc`, `stsz` (or `stz2`) and `stco` (or `co64`), and
// every run of samples a fragment's `moof` names, from its `tfhd` and `trun`, must lie inside the
// payload of an `mdat` and inside the file; no box may run past the file or the box that holds it.
//
// Only box headers, the `moov` and the `moof`s are read, at their offsets, never the media itself.
// Every byte is taken as hostile: no count is trusted beyond the bytes that hold its entries,
// nothing is allocated by a count, each loop moves forward by at least a box header, and the walk
// goes down fixed paths (moov/trak/mdia/minf/stbl, moov/mvex, moof/traf), never deeper. A header
// too small to be one ends its parent, as it does for ffmpeg; a file with no `moov` at all is left
// to ffmpeg.

/** A `moov` larger than this is not read (a day of 60 fps video indexes in about 25 MiB). */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;
/**
 * Boxes at the top level walked at most: a whole file has a handful; a fragmented one up to five per
 * fragment (ffmpeg's HLS segments: styp, two sidx, moof, mdat), so that a stream of MAX_SEGMENTS'
 * default 43 200 segments fits, while a file of empty boxes stays cheap to walk.
 */
export const MAX_TOP_LEVEL_BOXES = 500_000;
/** Separate runs of samples the fragments may name, at most: a fragment's runs follow one another, so a file has about one per fragment. */
export const MAX_FRAGMENT_SPANS = 200_000;
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

/** A fault in the index: why the file cannot be whole (or read). */
export class IndexFault extends Error {}

/** The boxes inside `parent` (a box of `bytes`). One that runs past its parent's end is a fault: its bytes are another box's, or missing. */
function* children(bytes: Buffer, parent: Child): Generator<Child> {
  let at = parent.body;
  for (;;) {
    const header = headerAt(bytes, at, parent.end);
    if (!header) return;
    const boxEnd = header.size === null ? parent.end : at + header.size;
    if (boxEnd > parent.end)
      throw new IndexFault(`its ${header.type} box runs ${boxEnd - parent.end} bytes past the end of the ${parent.type} box that holds it`);
    yield { type: header.type, body: at + header.headerBytes, end: boxEnd };
    at = boxEnd;
  }
}

/** The first box of `type` in `parent`; its other boxes are walked too, so that one running past it is found. */
export function child(bytes: Buffer, parent: Child, type: string): Child | null {
  let found: Child | null = null;
  for (const box of children(bytes, parent)) if (!found && box.type === type) found = box;
  return found;
}

/** The payload `bytes` of a box of `type` as the parent of what it holds. */
export const asParent = (bytes: Buffer, type: string): Child => ({ type, body: 0, end: bytes.length });

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
  for (const trak of children(moov, asParent(moov, 'moov'))) {
    if (trak.type !== 'trak') continue;
    number++;
    // ffmpeg skips a trak inside another one: the track it holds would be dropped from the file.
    if (child(moov, trak, 'trak')) throw new IndexFault(`track ${number}'s box swallows the track after it (a trak inside a trak)`);
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

/** Why `bytes` of samples at `start` are not in the file: past its `fileBytes`, or outside its `mdats`; null when they are in. */
function missing(start: number, bytes: number, mdats: readonly ByteSpan[], fileBytes: number): string | null {
  const end = start + bytes;
  if (end > fileBytes) return `past the end of the ${fileBytes}-byte file`;
  const mdat = spanAt(mdats, start);
  return !mdat || end > mdat.end ? 'outside its media data (mdat)' : null;
}

/** Why `track`'s chunks are not all inside `mdats` and the file, or null when they are. */
function trackFault(track: Track, mdats: readonly ByteSpan[], fileBytes: number): string | null {
  for (const { chunk, firstSample, samples } of chunksOf(track)) {
    const bytes = track.sizes.bytes(firstSample, samples);
    if (bytes === 0) continue;
    const start = track.offsets.at(chunk);
    const where = missing(start, bytes, mdats, fileBytes);
    if (where) return `track ${track.number} has ${bytes} bytes of samples at byte ${start}, ${where}`;
  }
  return null;
}

/**
 * Why the samples that the `moov` payload `moov` names are not all in the file: null when every
 * chunk lies inside one of `mdats` (the payloads of the file's `mdat` boxes, in file order, each
 * cut at the file's end) and inside the file's `fileBytes`.
 */
export function indexFault(moov: Buffer, mdats: readonly ByteSpan[], fileBytes: number): string | null {
  return faultOr(() => {
    for (const track of tracksOf(moov)) {
      const fault = trackFault(track, mdats, fileBytes);
      if (fault) return fault;
    }
    return null;
  });
}

/** Per track ID, the size of a sample whose fragment gives none (the `moov`'s mvex/trex). */
export function trexSampleSizes(moov: Buffer): Map<number, number> {
  const sizes = new Map<number, number>();
  const mvex = child(moov, asParent(moov, 'moov'), 'mvex');
  for (const trex of mvex ? children(moov, mvex) : []) {
    if (trex.type !== 'trex') continue;
    if (trex.end - trex.body < 24) throw new IndexFault('its trex box is cut short');
    sizes.set(moov.readUInt32BE(trex.body + 4), moov.readUInt32BE(trex.body + 16));
  }
  return sizes;
}

// The flags of tfhd and trun (ISO/IEC 14496-12, 8.8.7 and 8.8.8) that say which fields they hold.
const TFHD_BASE_DATA_OFFSET = 0x1;
const TFHD_SAMPLE_DESCRIPTION = 0x2;
const TFHD_SAMPLE_DURATION = 0x8;
const TFHD_SAMPLE_SIZE = 0x10;
const TFHD_BASE_IS_MOOF = 0x20000;
const TRUN_DATA_OFFSET = 0x1;
const TRUN_FIRST_SAMPLE_FLAGS = 0x4;
const TRUN_SAMPLE_SIZE = 0x200;
/** Each sample's duration, size, flags and composition offset: the fields of a trun entry, in order. */
const TRUN_ENTRY_FIELDS = [0x100, TRUN_SAMPLE_SIZE, 0x400, 0x800];

/** Where a track fragment's data is counted from, and the size of a sample whose run gives none. */
function trackFragmentHeader(moof: Buffer, tfhd: Child, implicitBase: number, moofAt: number, defaultSizes: ReadonlyMap<number, number>) {
  if (tfhd.end - tfhd.body < 8) throw new IndexFault('its tfhd box is cut short');
  const flags = moof.readUInt32BE(tfhd.body);
  const track = moof.readUInt32BE(tfhd.body + 4);
  let at = tfhd.body + 8;
  const field = (flag: number, bytes: 4 | 8): number | null => {
    if (!(flags & flag)) return null;
    if (tfhd.end - at < bytes) throw new IndexFault('its tfhd box is cut short');
    const value = bytes === 8 ? Number(moof.readBigUInt64BE(at)) : moof.readUInt32BE(at);
    at += bytes;
    return value;
  };
  const base = field(TFHD_BASE_DATA_OFFSET, 8);
  field(TFHD_SAMPLE_DESCRIPTION, 4);
  field(TFHD_SAMPLE_DURATION, 4);
  const sampleBytes = field(TFHD_SAMPLE_SIZE, 4);
  return { base: base ?? (flags & TFHD_BASE_IS_MOOF ? moofAt : implicitBase), sampleBytes: sampleBytes ?? defaultSizes.get(track) ?? 0 };
}

/** The span of the file that `trun` puts its samples in: from its data offset, else from where the run before it ended. */
function trackRun(moof: Buffer, trun: Child, base: number, previousEnd: number, sampleBytes: number): ByteSpan {
  if (trun.end - trun.body < 8) throw new IndexFault('its trun box is cut short');
  const flags = moof.readUInt32BE(trun.body);
  const count = moof.readUInt32BE(trun.body + 4);
  const entries = trun.body + 8 + (flags & TRUN_DATA_OFFSET ? 4 : 0) + (flags & TRUN_FIRST_SAMPLE_FLAGS ? 4 : 0);
  const entryBytes = 4 * TRUN_ENTRY_FIELDS.filter((field) => flags & field).length;
  if (entries > trun.end) throw new IndexFault('its trun box is cut short');
  const room = entryBytes > 0 ? Math.floor((trun.end - entries) / entryBytes) : count;
  if (count > room) throw new IndexFault(`its trun box claims ${count} samples but has room for ${room}`);
  const start = flags & TRUN_DATA_OFFSET ? base + moof.readInt32BE(trun.body + 8) : previousEnd;
  const sizeAt = entries + (flags & TRUN_ENTRY_FIELDS[0]! ? 4 : 0);
  const bytes = flags & TRUN_SAMPLE_SIZE ? sum(count, (i) => moof.readUInt32BE(sizeAt + i * entryBytes)) : count * sampleBytes;
  return { start, end: start + bytes };
}

/**
 * The spans of the file that the fragment whose `moof` is at `moofAt` (its payload `moof`) puts
 * samples in, a run that starts where the one before it ended joined to it. A track fragment counts
 * from its tfhd's base offset, else from the moof (when its tfhd says so, or when it is the first),
 * else from where the data of the one before it ended; `defaultSizes` are the moov's (trexSampleSizes).
 */
export function fragmentSpans(moof: Buffer, moofAt: number, defaultSizes: ReadonlyMap<number, number>): ByteSpan[] {
  const spans: ByteSpan[] = [];
  let dataEnd: number | null = null;
  for (const traf of children(moof, asParent(moof, 'moof'))) {
    if (traf.type !== 'traf') continue;
    const tfhd = child(moof, traf, 'tfhd');
    if (!tfhd) throw new IndexFault('its traf box has no tfhd box');
    const { base, sampleBytes } = trackFragmentHeader(moof, tfhd, dataEnd ?? moofAt, moofAt, defaultSizes);
    let runEnd = base;
    for (const trun of children(moof, traf)) {
      if (trun.type !== 'trun') continue;
      const run = trackRun(moof, trun, base, runEnd, sampleBytes);
      runEnd = run.end;
      if (run.end === run.start) continue;
      const last = spans.at(-1);
      if (last && last.end === run.start) last.end = run.end;
      else spans.push(run);
    }
    dataEnd = runEnd;
  }
  return spans;
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

/** A span of samples that a fragment names, and where its moof is (for the message). */
type FragmentSpan = ByteSpan & { moofAt: number };

/**
 * Why the MP4-family file `file` cannot be whole: its index or its fragments name sample data
 * outside its `mdat` boxes or past its end (a transfer cut short), a box runs past the file or the
 * box that holds it, its tables are cut short, or it is too odd to be checked (an index over
 * MAX_INDEX_BYTES, more than MAX_TOP_LEVEL_BOXES boxes or MAX_FRAGMENT_SPANS runs of samples).
 * An MP4 (its `ftyp` first) with an `mdat` and no `moov` this can read (none in the boxes before
 * one that is no box) is cut before its index or has none. Null when all it names is there, and
 * when any other file has no `moov`: ffmpeg then has its say.
 */
export async function mp4IndexFault(file: string): Promise<string | null> {
  const handle = await open(file, 'r');
  try {
    const fileBytes = (await handle.stat()).size;
    const reader = new HeaderReader(handle, fileBytes);
    const mdats: ByteSpan[] = [];
    const fragments: FragmentSpan[] = [];
    let moov: Buffer | null = null;
    let defaultSizes = new Map<number, number>();
    let overrun: string | null = null;
    let at = 0;
    let firstType: string | null = null;
    for (let boxes = 0; ; boxes++) {
      const header = at < fileBytes ? await reader.headerAt(at) : null;
      if (!header) break;
      firstType ??= header.type;
      if (boxes === MAX_TOP_LEVEL_BOXES) return `it has more than ${MAX_TOP_LEVEL_BOXES} boxes at its top level`;
      const end = header.size === null ? fileBytes : at + header.size;
      // Said only when nothing more telling is found: a cut file's index names what it lacks.
      overrun ??= end > fileBytes ? `its ${header.type} box at byte ${at} claims ${end - at} bytes, ${end - fileBytes} more than the file holds` : null;
      const body = { start: at + header.headerBytes, end: Math.min(end, fileBytes) };
      if (header.type === 'mdat') mdats.push(body);
      else if (header.type === 'moof' || (header.type === 'moov' && !moov)) {
        const what = header.type === 'moov' ? 'index (moov)' : `fragment index (moof) at byte ${at}`;
        if (end - body.start > MAX_INDEX_BYTES)
          return `its ${what} of ${end - body.start} bytes is more than the ${MAX_INDEX_BYTES} bytes the service reads of one`;
        const payload = await reader.bytes(body.start, Math.max(0, body.end - body.start));
        if (header.type === 'moov') {
          moov = payload;
          const sizes = faultOr(() => trexSampleSizes(payload));
          if (typeof sizes === 'string') return sizes;
          defaultSizes = sizes;
        } else {
          const spans = faultOr(() => fragmentSpans(payload, at, defaultSizes));
          if (typeof spans === 'string') return `the fragment whose moof is at byte ${at} is unreadable: ${spans}`;
          if (fragments.length + spans.length > MAX_FRAGMENT_SPANS) return `its fragments name more than ${MAX_FRAGMENT_SPANS} separate runs of samples`;
          for (const span of spans) fragments.push({ ...span, moofAt: at });
        }
      }
      at = end;
    }
    // Without a moov ffmpeg finds no media: its failure says more than the boxes do, unless the file
    // is an MP4 (its ftyp first) with media data: one cut before its index at the end, or without one.
    if (!moov) return mdats.length > 0 && firstType === 'ftyp' ? (overrun ?? 'it has media data (mdat) but no index (moov)') : null;
    return indexFault(moov, mdats, fileBytes) ?? fragmentsFault(fragments, mdats, fileBytes) ?? overrun;
  } finally {
    await handle.close();
  }
}

/** What `read` returns, or the message of the IndexFault it throws. */
function faultOr<T>(read: () => T): T | string {
  try {
    return read();
  } catch (error) {
    if (error instanceof IndexFault) return error.message;
    throw error;
  }
}

/** Why the samples that fragments name are not all inside `mdats` and the file, or null when they are. */
function fragmentsFault(fragments: readonly FragmentSpan[], mdats: readonly ByteSpan[], fileBytes: number): string | null {
  for (const { start, end, moofAt } of fragments) {
    const where = missing(start, end - start, mdats, fileBytes);
    if (where) return `the fragment whose moof is at byte ${moofAt} has ${end - start} bytes of samples at byte ${start}, ${where}`;
  }
  return null;
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

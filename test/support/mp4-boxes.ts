// MP4 boxes made byte by byte, for the tests of what reads an MP4's index (src/media/mp4-index.ts,
// src/media/mp4-clip.ts): whole ones, and ones that lie about their sizes and counts.

export const u32 = (...values: number[]): Buffer => {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeUInt32BE(value, i * 4));
  return bytes;
};
export const u64 = (...values: bigint[]): Buffer => {
  const bytes = Buffer.alloc(values.length * 8);
  values.forEach((value, i) => bytes.writeBigUInt64BE(value, i * 8));
  return bytes;
};

export function box(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([u32(8 + body.length), Buffer.from(type, 'latin1'), body]);
}

/** A box with a 64-bit size (size field 1). */
export function largeBox(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([u32(1), Buffer.from(type, 'latin1'), u64(BigInt(16 + body.length)), body]);
}

/** A full box: version 0, no flags. */
export const full = (type: string, ...parts: Buffer[]): Buffer => box(type, u32(0), ...parts);

export const stco = (...offsets: number[]) => full('stco', u32(offsets.length, ...offsets));
export const co64 = (...offsets: bigint[]) => full('co64', u32(offsets.length), u64(...offsets));
/** stsc entries: [first chunk (1-based), samples per chunk]. */
export const stsc = (...entries: [number, number][]) => full('stsc', u32(entries.length, ...entries.flatMap(([first, samples]) => [first, samples, 1])));
export const stsz = (...sizes: number[]) => full('stsz', u32(0, sizes.length, ...sizes));
export const constantStsz = (size: number, count: number) => full('stsz', u32(size, count));

/** A track whose sample table is `tables`. */
export const trak = (...tables: Buffer[]) => box('trak', box('mdia', box('minf', box('stbl', ...tables))));
/** The payload of a moov (what indexFault reads) holding `traks`. */
export const moovBody = (...traks: Buffer[]) => Buffer.concat([full('mvhd', Buffer.alloc(96)), ...traks]);

/** stts runs: [sample count, duration of each]. */
export const stts = (...runs: [number, number][]) => full('stts', u32(runs.length, ...runs.flat()));
/** stss: sync samples, 1-based. */
export const stss = (...samples: number[]) => full('stss', u32(samples.length, ...samples));
/** A version-0 mvhd of `duration` in `timescale`. */
export const mvhd = (timescale: number, duration: number) => full('mvhd', u32(0, 0, timescale, duration), Buffer.alloc(80));
/** An edts holding an elst of edits: [duration in the movie's timescale, media time (-1: empty)], each at rate 1. */
export const edts = (...edits: [number, number][]) =>
  box('edts', full('elst', u32(edits.length, ...edits.flatMap(([duration, time]) => [duration, time >>> 0, 0x10000]))));

/** A track with a clock: its handler (`vide`, `soun`), its timescale, its sample tables and, if given, its edit list. */
export function timedTrak(handler: string, timescale: number, tables: Buffer[], edits?: Buffer): Buffer {
  const mdhd = full('mdhd', u32(0, 0, timescale, 0), Buffer.alloc(4));
  const hdlr = full('hdlr', u32(0), Buffer.from(handler, 'latin1'), Buffer.alloc(12));
  return box('trak', ...(edits ? [edits] : []), box('mdia', mdhd, hdlr, box('minf', box('stbl', ...tables))));
}

/** A box of a real file: its type and its bytes [start, end), header included. */
export type FileBox = { type: string; start: number; end: number };

/** The boxes of `file` inside `parent` (the top level when none is given); 32-bit sizes only, as ffmpeg writes files this small. */
export function boxesIn(file: Buffer, parent?: FileBox): FileBox[] {
  const boxes = [];
  const end = parent?.end ?? file.length;
  for (let at = parent ? parent.start + 8 : 0; at + 8 <= end;) {
    const size = file.readUInt32BE(at);
    if (size < 8) break;
    boxes.push({ type: file.toString('latin1', at + 4, at + 8), start: at, end: at + size });
    at += size;
  }
  return boxes;
}

/** A copy of `file` whose `box` claims `size` bytes: what it holds is left as it was. */
export function withSize(file: Buffer, box: FileBox, size: number): Buffer {
  const copy = Buffer.from(file);
  copy.writeUInt32BE(size, box.start);
  return copy;
}

/** A full box of version 0 with `flags`. */
const flagged = (type: string, flags: number, ...parts: Buffer[]) => box(type, u32(flags), ...parts);
/** The mvex of a fragmented file's moov, with a trex giving track 1 samples of `sampleBytes`. */
export const mvex = (sampleBytes = 0) => box('mvex', full('trex', u32(1, 1, 0, sampleBytes, 0)));
/** A tfhd of track 1 with `flags`, followed by the fields they name. */
export const tfhd = (flags: number, ...fields: Buffer[]) => flagged('tfhd', flags, u32(1), ...fields);
/** tfhd's flag for a data offset counted from the moof. */
export const BASE_IS_MOOF = 0x20000;
/** A trun of samples of `sizes` at `dataOffset` from its base. */
export const trun = (dataOffset: number, ...sizes: number[]) => flagged('trun', 0x201, u32(sizes.length, dataOffset >>> 0, ...sizes));
/** A trun of `count` samples of the default size, with no data offset (they follow the run before). */
export const defaultTrun = (count: number) => flagged('trun', 0, u32(count));
/** A moof of one fragment of track fragments `trafs`, each made of its boxes. */
export const moof = (...trafs: Buffer[][]) => box('moof', full('mfhd', u32(1)), ...trafs.map((traf) => box('traf', ...traf)));

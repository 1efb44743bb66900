import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { indexFault, MAX_FRAGMENT_SPANS, MAX_INDEX_BYTES, MAX_TOP_LEVEL_BOXES, mp4IndexFault } from '../../src/media/mp4-index.ts';
import {
  BASE_IS_MOOF,
  box,
  co64,
  constantStsz,
  defaultTrun,
  full,
  largeBox,
  moof,
  moovBody,
  mvex,
  stco,
  stsc,
  stsz,
  tfhd,
  trak,
  trun,
  u32,
  u64,
} from '../support/mp4-boxes.ts';

/** A trun with `flags` and the fields after them, as given. */
const flaggedTrun = (flags: number, ...fields: Buffer[]) => box('trun', u32(flags), ...fields);

// The check that an MP4's index points only at bytes the file holds, on boxes made here: whole
// files, files cut after their index, and boxes that lie about their sizes and counts. Whatever the
// bytes claim, the check ends quickly without allocating by a claimed count.

describe('indexFault, on the payload of a moov', () => {
  const mdat = [{ start: 1000, end: 2000 }];

  test('when every chunk lies inside an mdat, then there is no fault', () => {
    const moov = moovBody(trak(stco(1000, 1500), stsc([1, 2]), stsz(100, 200, 300, 200)), trak(stco(1300), stsc([1, 1]), stsz(100)));
    expect(indexFault(moov, mdat, 2000)).toBeNull();
  });

  test('when a chunk ends past the end of the file, then that is the fault', () => {
    const moov = moovBody(trak(stco(1000, 1500), stsc([1, 2]), stsz(100, 200, 300, 200)));
    expect(indexFault(moov, [{ start: 1000, end: 1600 }], 1600)).toBe('track 1 has 500 bytes of samples at byte 1500, past the end of the 1600-byte file');
  });

  test('when a chunk lies outside every mdat, or runs past the end of its mdat, then that is the fault', () => {
    expect(indexFault(moovBody(trak(stco(500), stsc([1, 1]), stsz(10))), mdat, 3000)).toMatch(/outside its media data/);
    expect(indexFault(moovBody(trak(stco(1990), stsc([1, 1]), stsz(11))), mdat, 3000)).toMatch(/outside its media data/);
    expect(indexFault(moovBody(trak(stco(1990), stsc([1, 1]), stsz(10))), mdat, 3000)).toBeNull();
  });

  test('when samples per chunk change along stsc, then each chunk is measured with its own run', () => {
    // Chunks 1-2 hold one sample each, chunk 3 three: 10, 20, then 30 + 40 + 50 = 120 bytes at 1881.
    const tables = [stco(1000, 1100, 1881), stsc([1, 1], [3, 3]), stsz(10, 20, 30, 40, 50)];
    expect(indexFault(moovBody(trak(...tables)), mdat, 3000)).toBe('track 1 has 120 bytes of samples at byte 1881, outside its media data (mdat)');
    expect(indexFault(moovBody(trak(stco(1000, 1100, 1880), stsc([1, 1], [3, 3]), stsz(10, 20, 30, 40, 50))), mdat, 3000)).toBeNull();
  });

  test('when offsets are 64-bit (co64), then they are checked too, even past 2^53', () => {
    expect(indexFault(moovBody(trak(co64(1000n), stsc([1, 1]), stsz(10))), mdat, 2000)).toBeNull();
    expect(indexFault(moovBody(trak(co64(2n ** 63n), stsc([1, 1]), stsz(10))), mdat, 2000)).toMatch(/past the end/);
  });

  test('when sizes are packed (stz2, 4, 8 or 16 bits), then they are read at their width', () => {
    const stz2 = (bits: number, count: number, packed: Buffer) => full('stz2', u32(bits, count), packed);
    // 4 bits: 0xF and 0x1 -> 16 bytes at 1984 ends at 2000 exactly; 8 bits: 255 bytes; 16 bits: 1000 bytes.
    expect(indexFault(moovBody(trak(stco(1984), stsc([1, 2]), stz2(4, 2, Buffer.from([0xf1])))), mdat, 2000)).toBeNull();
    expect(indexFault(moovBody(trak(stco(1985), stsc([1, 2]), stz2(4, 2, Buffer.from([0xf1])))), mdat, 3000)).toMatch(/outside/);
    expect(indexFault(moovBody(trak(stco(1000), stsc([1, 1]), stz2(8, 1, Buffer.from([255])))), mdat, 2000)).toBeNull();
    expect(indexFault(moovBody(trak(stco(1001), stsc([1, 1]), stz2(16, 1, Buffer.from([0x03, 0xe8])))), mdat, 2000)).toMatch(/1000 bytes/);
    expect(indexFault(moovBody(trak(stco(1000), stsc([1, 1]), stz2(12, 1, Buffer.from([1, 1])))), mdat, 2000)).toMatch(/stz2 box has sizes of 12 bits/);
  });

  test('when a fragmented file names no samples in its moov (empty tables), then there is nothing to check', () => {
    expect(indexFault(moovBody(trak(stco(), stsc(), stsz())), [], 5000)).toBeNull();
    expect(indexFault(moovBody(trak(full('mvex'))), [], 5000)).toBeNull();
  });

  test.each([
    ['stsz', () => full('stsz', u32(0, 0xffffffff, 1, 2))],
    ['stco', () => full('stco', u32(0xffffffff, 1000))],
    ['co64', () => full('co64', u32(0x20000000), u64(1000n))],
    ['stsc', () => full('stsc', u32(0xffffffff, 1, 1, 1))],
  ])('when %s claims 2^32 entries that its box has no room for, then that is the fault, found without reading them', (name, table) => {
    const tables = { stsz: stsz(10), [name === 'co64' ? 'co64' : 'stco']: stco(1000), stsc: stsc([1, 1]), [name]: table() };
    const moov = moovBody(trak(...Object.values(tables)));
    expect(indexFault(moov, mdat, 2000)).toMatch(new RegExp(`its ${name} box claims \\d+ entries but has room for [0-2]$`));
  });

  test('when one sample size stands for 2^32 samples and one chunk claims them all, then the chunk is measured without a loop over them', () => {
    const started = performance.now();
    const moov = moovBody(trak(stco(1000), stsc([1, 0xffffffff]), constantStsz(1, 0xffffffff)));
    expect(indexFault(moov, mdat, 2000)).toMatch(/4294967295 bytes of samples at byte 1000, past the end/);
    expect(performance.now() - started).toBeLessThan(100);
  });

  test('when stsc names more samples than stsz holds, or chunks it does not order, then only the samples there are counted', () => {
    expect(indexFault(moovBody(trak(stco(1000, 1500), stsc([1, 0xffffffff]), stsz(10, 20))), mdat, 2000)).toBeNull();
    expect(indexFault(moovBody(trak(stco(1000, 1500), stsc([2, 1], [1, 1], [0, 5]), stsz(10, 20))), mdat, 2000)).toBeNull();
  });

  test.each([
    ['a box of size 0 (to the end of its parent)', () => Buffer.concat([u32(0), Buffer.from('free')])],
    ['a box of size 4 (smaller than its header)', () => Buffer.concat([u32(4), Buffer.from('free'), Buffer.alloc(64)])],
    ['a 64-bit size of 8 (smaller than its header)', () => Buffer.concat([u32(1), Buffer.from('free'), u64(8n), Buffer.alloc(64)])],
    ['a cut 64-bit size', () => Buffer.concat([u32(1), Buffer.from('trak'), u32(0)])],
  ])('when the moov ends in %s, then the walk ends there', (_name, tail) => {
    const moov = Buffer.concat([moovBody(trak(stco(1000), stsc([1, 1]), stsz(10))), tail()]);
    expect(indexFault(moov, mdat, 2000)).toBeNull();
    expect(indexFault(moov, [], 2000)).toMatch(/outside/);
  });

  test('when a box runs past the box that holds it, then that is the fault, however deep it is', () => {
    const whole = trak(stco(1000, 1100, 1200), stsc([1, 1]), stsz(10, 10, 10));
    // The trak (and so its stbl and last box, stsz) claims 4 bytes more than the moov holds.
    expect(indexFault(moovBody(whole).subarray(0, -4), mdat, 2000)).toBe('its trak box runs 4 bytes past the end of the moov box that holds it');
    const tail = Buffer.concat([u32(0xffffffff), Buffer.from('trak'), Buffer.alloc(64)]);
    expect(indexFault(Buffer.concat([moovBody(whole), tail]), mdat, 2000)).toMatch(/^its trak box runs \d+ bytes past the end of the moov box/);
    // An stsz that claims 4 bytes more than it has, last in its stbl.
    const claiming = stsz(10);
    claiming.writeUInt32BE(claiming.length + 4, 0);
    const stbl = box('stbl', stco(1000), stsc([1, 1]), claiming);
    expect(indexFault(moovBody(box('trak', box('mdia', box('minf', stbl)))), mdat, 2000)).toBe(
      'its stsz box runs 4 bytes past the end of the stbl box that holds it',
    );
  });

  test('when a trak swallows the next one, then that is the fault: ffmpeg would drop the track inside', () => {
    const second = trak(stco(1500), stsc([1, 1]), stsz(10));
    const first = box('trak', box('mdia', box('minf', box('stbl', stco(1000), stsc([1, 1]), stsz(10)))), second);
    expect(indexFault(moovBody(first), mdat, 2000)).toBe("track 1's box swallows the track after it (a trak inside a trak)");
    expect(indexFault(moovBody(trak(stco(1000), stsc([1, 1]), stsz(10)), second), mdat, 2000)).toBeNull();
  });

  test('when a moov is a million empty boxes, then the walk ends promptly', () => {
    const started = performance.now();
    const moov = Buffer.alloc(8 * 1_000_000, box('free'));
    expect(indexFault(moov, [], 10)).toBeNull();
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('mp4IndexFault, on a file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vds-mp4-index-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  let count = 0;
  async function faultOf(...boxes: Buffer[]): Promise<string | null> {
    const file = path.join(dir, `${count++}.mp4`);
    await writeFile(file, Buffer.concat(boxes));
    return mp4IndexFault(file);
  }

  const ftyp = box('ftyp', Buffer.from('isom'), u32(512), Buffer.from('isomiso2avc1mp41'));
  const samples = Buffer.alloc(3000, 7);
  /** A fast-start layout: ftyp, moov, then an mdat whose payload starts at `payloadAt` and holds 3 samples of 1000 bytes. */
  const fastStart = (mdat: (payload: Buffer) => Buffer, headerBytes: number) => {
    const moovFor = (payloadAt: number) => box('moov', moovBody(trak(stco(payloadAt, payloadAt + 2000), stsc([1, 2], [2, 1]), stsz(1000, 1000, 1000))));
    const payloadAt = ftyp.length + moovFor(0).length + headerBytes;
    return [ftyp, moovFor(payloadAt), mdat(samples)];
  };

  test('when a fast-start file is whole, then there is no fault; when it is cut after its moov, then there is', async () => {
    const boxes = fastStart((payload) => box('mdat', payload), 8);
    expect(await faultOf(...boxes)).toBeNull();
    const whole = Buffer.concat(boxes);
    expect(await faultOf(whole.subarray(0, whole.length - 1))).toMatch(/track 1 has 1000 bytes of samples at byte \d+, past the end of the \d+-byte file/);
    expect(await faultOf(whole.subarray(0, whole.length - 2500))).toMatch(/past the end/);
  });

  test('when the mdat has a 64-bit size, then its payload starts after it', async () => {
    const boxes = fastStart((payload) => largeBox('mdat', payload), 16);
    expect(await faultOf(...boxes)).toBeNull();
    expect(await faultOf(...boxes.slice(0, -1), boxes.at(-1)!.subarray(0, -10))).toMatch(/past the end/);
  });

  test('when the mdat has size 0, then it runs to the end of the file, and a cut is still found', async () => {
    const boxes = fastStart((payload) => Buffer.concat([u32(0), Buffer.from('mdat'), payload]), 8);
    expect(await faultOf(...boxes)).toBeNull();
    expect(await faultOf(...boxes.slice(0, -1), boxes.at(-1)!.subarray(0, -1))).toMatch(/past the end/);
  });

  test('when the moov comes after the mdat, then the mdat is found before it', async () => {
    const moov = box('moov', moovBody(trak(stco(ftyp.length + 8), stsc([1, 3]), stsz(1000, 1000, 1000))));
    expect(await faultOf(ftyp, box('mdat', samples), moov)).toBeNull();
    expect(await faultOf(ftyp, box('free', samples), moov)).toMatch(/outside its media data/);
  });

  test('when an MP4 has media data and no moov, then that is the fault; with no media data, no ftyp first, or no box at the top level, it is left to ffmpeg', async () => {
    expect(await faultOf(ftyp, box('mdat', samples))).toBe('it has media data (mdat) but no index (moov)');
    expect(await faultOf(box('mdat', samples))).toBeNull();
    expect(await faultOf(ftyp, box('free', samples))).toBeNull();
    expect(await faultOf(ftyp, u32(3), Buffer.from('moov'), Buffer.alloc(100))).toBeNull();
    expect(await faultOf(Buffer.alloc(0))).toBeNull();
  });

  /** A fragmented file: an index that names no samples, then fragments of track 1 made by `fragment` from where its moof starts, each followed by an mdat of `samples`. */
  const fragmented = (fragments: number, fragment: (moofAt: number) => Buffer, trexBytes = 0) => {
    const boxes = [ftyp, box('moov', moovBody(trak(stco(), stsc(), stsz()), mvex(trexBytes)))];
    for (let i = 0; i < fragments; i++) boxes.push(fragment(Buffer.concat(boxes).length), box('mdat', samples));
    return boxes;
  };
  /** A moof whose one trun names `sizes` at the start of the mdat after it. */
  const movieFragment = (...sizes: number[]) => {
    const moofBytes = moof([tfhd(BASE_IS_MOOF), trun(0, ...sizes)]).length;
    return moof([tfhd(BASE_IS_MOOF), trun(moofBytes + 8, ...sizes)]);
  };

  test('when a fragmented file is whole, then there is no fault; when it is cut inside its last mdat, then its moof names what is missing', async () => {
    const boxes = fragmented(3, () => movieFragment(1000, 1000, 1000));
    expect(await faultOf(...boxes)).toBeNull();
    const whole = Buffer.concat(boxes);
    const lastMoof = whole.length - samples.length - 8 - boxes.at(-2)!.length;
    expect(await faultOf(whole.subarray(0, whole.length - 1))).toBe(
      `the fragment whose moof is at byte ${lastMoof} has 3000 bytes of samples at byte ${whole.length - 3000}, past the end of the ${whole.length - 1}-byte file`,
    );
    // The last mdat's size mended to what is left: only the moof tells.
    const mended = Buffer.concat([...boxes.slice(0, -1), box('mdat', samples.subarray(0, 2000))]);
    expect(await faultOf(mended)).toMatch(/the fragment whose moof is at byte \d+ has 3000 bytes of samples at byte \d+, past the end of the \d+-byte file/);
  });

  test('when a fragment names samples outside its mdat, before its moof or by a negative offset, then that is the fault', async () => {
    expect(await faultOf(...fragmented(1, () => movieFragment(1000, 1000, 1001)))).toMatch(/3001 bytes of samples at byte \d+, past the end/);
    const inMoof = () => moof([tfhd(BASE_IS_MOOF), trun(8, 10)]);
    expect(await faultOf(...fragmented(1, inMoof))).toMatch(/10 bytes of samples at byte \d+, outside its media data \(mdat\)/);
    const negative = () => moof([tfhd(BASE_IS_MOOF), trun(-100_000, 10)]);
    expect(await faultOf(...fragmented(1, negative))).toMatch(/outside its media data/);
  });

  test('when runs give no sizes, then they come from the tfhd, else from the trex; and a run without an offset follows the one before', async () => {
    const fromTfhd = (moofAt: number) => {
      const make = (offset: number) => moof([tfhd(0x1 | 0x10, u64(BigInt(moofAt + offset)), u32(1000)), defaultTrun(2), defaultTrun(1)]);
      return make(make(0).length + 8);
    };
    expect(await faultOf(...fragmented(2, fromTfhd))).toBeNull();
    const fromTrex = () => {
      const make = (offset: number) => moof([tfhd(BASE_IS_MOOF), trun(offset), defaultTrun(3)]);
      return make(make(0).length + 8);
    };
    expect(await faultOf(...fragmented(2, fromTrex, 1000))).toBeNull();
    expect(await faultOf(...fragmented(2, fromTrex, 1001))).toMatch(/3003 bytes of samples at byte \d+, outside its media data/);
  });

  test('when a second track fragment has no base of its own, then its data follows the first one', async () => {
    const make = (offset: number) => moof([tfhd(0), trun(offset, 1000)], [tfhd(0), defaultTrun(0), trun(0, 1000, 1000)]);
    // The second traf's data starts where the first's ended: its data offset of 0 is from there.
    expect(await faultOf(...fragmented(1, () => make(make(0).length + 8)))).toBeNull();
    const longer = (offset: number) => moof([tfhd(0), trun(offset, 1000)], [tfhd(0), trun(1, 1000, 1000)]);
    expect(await faultOf(...fragmented(1, () => longer(longer(0).length + 8)))).toMatch(/past the end|outside/);
  });

  test.each([
    [
      'a trun claims 2^32 samples it has no room for',
      () => [tfhd(BASE_IS_MOOF), flaggedTrun(0x201, u32(0xffffffff, 0, 1000))],
      /its trun box claims 4294967295 samples but has room for 1/,
    ],
    ['a trun is cut short', () => [tfhd(BASE_IS_MOOF), box('trun', u32(0x201))], /its trun box is cut short/],
    ['a tfhd is cut short', () => [box('tfhd', u32(0x1), u32(1), u32(0)), trun(0, 10)], /its tfhd box is cut short/],
    ['a traf has no tfhd', () => [trun(0, 10)], /its traf box has no tfhd box/],
  ])('when %s, then the fragment is the fault, found without reading its entries', async (_name, traf, why) => {
    const started = performance.now();
    const fault = await faultOf(...fragmented(1, () => moof(traf())));
    expect(fault).toMatch(/^the fragment whose moof is at byte \d+ is unreadable: /);
    expect(fault).toMatch(why);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('when a fragment names more separate runs of samples than MAX_FRAGMENT_SPANS, then that is the fault, found promptly', async () => {
    const started = performance.now();
    // Runs of one byte with a byte between them: none follows the one before.
    const runs = Array.from({ length: MAX_FRAGMENT_SPANS + 1 }, (_, i) => trun(2 * i, 1));
    expect(await faultOf(...fragmented(1, () => moof([tfhd(BASE_IS_MOOF), Buffer.concat(runs)])))).toBe(
      `its fragments name more than ${MAX_FRAGMENT_SPANS} separate runs of samples`,
    );
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('when a fragmented file has more top-level boxes than MAX_TOP_LEVEL_BOXES, then that is the fault', async () => {
    const fragments = Buffer.alloc(8 * (MAX_TOP_LEVEL_BOXES + 10), box('free'));
    expect(await faultOf(ftyp, box('moov', moovBody(trak(stco(), stsc(), stsz()))), fragments)).toBe(
      `it has more than ${MAX_TOP_LEVEL_BOXES} boxes at its top level`,
    );
  });

  test('when a box at the top level claims more bytes than the file holds, then that is the fault, with a moov or without one', async () => {
    const boxes = fastStart((payload) => box('mdat', payload), 8);
    const claiming = Buffer.from(boxes[2]!);
    claiming.writeUInt32BE(claiming.length + 5000, 0);
    expect(await faultOf(boxes[0]!, boxes[1]!, claiming)).toBe(
      `its mdat box at byte ${boxes[0]!.length + boxes[1]!.length} claims ${claiming.length + 5000} bytes, 5000 more than the file holds`,
    );
    expect(await faultOf(boxes[0]!, claiming)).toBe(
      `its mdat box at byte ${boxes[0]!.length} claims ${claiming.length + 5000} bytes, 5000 more than the file holds`,
    );
  });

  test('when a moov that names samples is followed by too many top-level boxes, then that is the fault', async () => {
    const started = performance.now();
    const fragments = Buffer.alloc(8 * (MAX_TOP_LEVEL_BOXES + 10), box('free'));
    const moov = box('moov', moovBody(trak(stco(0), stsc([1, 1]), stsz(1))));
    expect(await faultOf(ftyp, moov, fragments)).toBe(`it has more than ${MAX_TOP_LEVEL_BOXES} boxes at its top level`);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('when a moov claims more than MAX_INDEX_BYTES, then it is refused without being read', async () => {
    const claim = Buffer.concat([u32(MAX_INDEX_BYTES + 9), Buffer.from('moov'), Buffer.alloc(64)]);
    expect(await faultOf(ftyp, claim)).toMatch(/its index \(moov\) of \d+ bytes is more than/);
  });
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { indexFault, MAX_INDEX_BYTES, MAX_TOP_LEVEL_BOXES, mp4IndexFault } from '../../src/media/mp4-index.ts';
import { box, co64, constantStsz, full, largeBox, moovBody, stco, stsc, stsz, trak, u32, u64 } from '../support/mp4-boxes.ts';

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
    ['a box larger than its parent', () => Buffer.concat([u32(0xffffffff), Buffer.from('trak'), Buffer.alloc(64)])],
    ['a cut 64-bit size', () => Buffer.concat([u32(1), Buffer.from('trak'), u32(0)])],
  ])('when the moov ends in %s, then the walk ends there', (_name, tail) => {
    const moov = Buffer.concat([moovBody(trak(stco(1000), stsc([1, 1]), stsz(10))), tail()]);
    expect(indexFault(moov, mdat, 2000)).toBeNull();
    expect(indexFault(moov, [], 2000)).toMatch(/outside/);
  });

  test('when a sample table box is cut inside its parent, then its entries are missing and that is the fault', () => {
    const whole = trak(stco(1000, 1100, 1200), stsc([1, 1]), stsz(10, 10, 10));
    // The stbl (and so its last box, stsz) claims more than the moov holds.
    expect(indexFault(moovBody(whole).subarray(0, -4), mdat, 2000)).toMatch(/its stsz box claims 3 entries but has room for 2/);
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

  test('when there is no moov, or the top level holds no box, then it is left to ffmpeg', async () => {
    expect(await faultOf(ftyp, box('mdat', samples))).toBeNull();
    expect(await faultOf(ftyp, u32(3), Buffer.from('moov'), Buffer.alloc(100))).toBeNull();
    expect(await faultOf(Buffer.alloc(0))).toBeNull();
  });

  test('when a fragmented file has an empty moov, then its fragments are not walked', async () => {
    const fragments = Array.from({ length: MAX_TOP_LEVEL_BOXES + 10 }, () => box('free'));
    expect(await faultOf(ftyp, box('moov', moovBody(trak(stco(), stsc(), stsz()))), ...fragments)).toBeNull();
  });

  test('when a moov that names samples is followed by too many top-level boxes, then that is the fault', async () => {
    const started = performance.now();
    const fragments = Array.from({ length: MAX_TOP_LEVEL_BOXES + 10 }, () => box('free'));
    const moov = box('moov', moovBody(trak(stco(0), stsc([1, 1]), stsz(1))));
    expect(await faultOf(ftyp, moov, ...fragments)).toBe(`it has more than ${MAX_TOP_LEVEL_BOXES} boxes at its top level`);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('when a moov claims more than MAX_INDEX_BYTES, then it is refused without being read', async () => {
    const claim = Buffer.concat([u32(MAX_INDEX_BYTES + 9), Buffer.from('moov'), Buffer.alloc(64)]);
    expect(await faultOf(ftyp, claim)).toMatch(/its index \(moov\) of \d+ bytes is more than/);
  });
});

import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { hashFileSpan, sha256OfFile } from '../../src/files/hash.ts';

// Files hashed from the disk, read 1 MiB at a time into one buffer: whole, by spans that cross the
// buffer's edges, and short of the end asked for.

let dir: string;
let file: string;
const bytes = randomBytes(2.5 * 1024 * 1024 + 17);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'file-hash-'));
  file = path.join(dir, 'file.bin');
  await writeFile(file, bytes);
});

afterAll(() => rm(dir, { recursive: true, force: true }));

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

test('when a file of several reads is hashed whole, then the hash is of every byte', async () => {
  expect(await sha256OfFile(file)).toBe(sha256(bytes));
});

test('when spans that cross the reads are hashed one after another, then together they hash the file', async () => {
  const hash = createHash('sha256');
  const cuts = [0, 1, 1024 * 1024 + 3, 2 * 1024 * 1024 - 1, bytes.length];
  for (let at = 1; at < cuts.length; at++) expect(await hashFileSpan(hash, file, cuts[at - 1]!, cuts[at]!)).toBe(cuts[at]);
  expect(hash.digest('hex')).toBe(sha256(bytes));
});

test('when spans are hashed into one buffer the caller gives, then together they hash the file, read that buffer at a time', async () => {
  const hash = createHash('sha256');
  const buffer = Buffer.alloc(4096);
  const cuts = [0, 5000, 2 * 1024 * 1024 + 7, bytes.length];
  for (let at = 1; at < cuts.length; at++) expect(await hashFileSpan(hash, file, cuts[at - 1]!, cuts[at]!, { buffer })).toBe(cuts[at]);
  expect(hash.digest('hex')).toBe(sha256(bytes));
  // The last read was into it.
  expect(buffer.equals(Buffer.alloc(4096))).toBe(false);
});

test('when a span reaches past the end of the file, then it says where the file ended', async () => {
  const hash = createHash('sha256');
  expect(await hashFileSpan(hash, file, 2 * 1024 * 1024, bytes.length + 5000)).toBe(bytes.length);
  expect(hash.digest('hex')).toBe(sha256(bytes.subarray(2 * 1024 * 1024)));
});

test('when the signal is aborted, then hashing stops with its reason', async () => {
  const stop = new AbortController();
  stop.abort(new Error('stopped'));
  await expect(sha256OfFile(file, stop.signal)).rejects.toThrow('stopped');
});

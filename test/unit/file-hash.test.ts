import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { hashThread } from '../../src/files/hash-thread.ts';
import { sha256OfFile } from '../../src/files/hash.ts';
import { WrittenPrefix } from '../../src/files/written-prefix.ts';

// Files hashed on the hashing thread: whole, and followed while they grow, as a download's file is.

let dir: string;
let file: string;
const bytes = randomBytes(2.5 * 1024 * 1024 + 17);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'file-hash-'));
  file = path.join(dir, 'file.bin');
  await writeFile(file, bytes);
});

afterAll(async () => {
  await hashThread.close();
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

test('when a file of several reads is hashed whole, then the hash is of every byte', async () => {
  expect(await sha256OfFile(file)).toBe(sha256(bytes));
});

test('when a file is followed while it grows, then its hash is of every byte written, read as far as it was said to be whole', async () => {
  const growing = path.join(dir, 'growing.bin');
  await writeFile(growing, '');
  const hash = hashThread.follow(growing);
  const cuts = [0, 1, 1024 * 1024 + 3, 2 * 1024 * 1024 - 1, bytes.length];
  for (let at = 1; at < cuts.length; at++) {
    await appendFile(growing, bytes.subarray(cuts[at - 1], cuts[at]));
    hash.upTo(cuts[at]!);
  }
  expect(await hash.digest(bytes.length)).toBe(sha256(bytes));
});

test('when spans are written out of order, then the prefix grows only as far as the file is whole from its start', () => {
  const prefix = new WrittenPrefix();
  const seen: number[] = [];
  prefix.follow((end) => seen.push(end));
  prefix.landed(100, 200);
  expect(prefix.end).toBe(0);
  prefix.landed(0, 50);
  prefix.landed(50, 100);
  prefix.landed(300, 400);
  prefix.landed(200, 300);
  expect(seen).toEqual([50, 200, 400]);
});

test('when the file holds fewer bytes than the hash is asked for, then it fails and says how many it read', async () => {
  const hash = hashThread.follow(file);
  await expect(hash.digest(bytes.length + 5000)).rejects.toThrow(`only ${bytes.length} of the file's ${bytes.length + 5000} bytes`);
});

test('when the file is missing, then hashing it fails with the reason', async () => {
  await expect(sha256OfFile(path.join(dir, 'missing.bin'))).rejects.toThrow('ENOENT');
});

test('when the signal is aborted, then hashing stops with its reason', async () => {
  const stop = new AbortController();
  stop.abort(new Error('stopped'));
  await expect(sha256OfFile(file, stop.signal)).rejects.toThrow('stopped');
});

import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { workEnded } from '../src/core/garbage.ts';
import { heldBody } from '../src/sources/held-body.ts';

// Buffers outside V8's heap that the service is done with: a body read through Node's client comes
// in a buffer of its own for every 64 KiB, and those already read must be freed as the body goes
// on; what is left once the worker's downloads have ended must be freed then, not carried into the
// next ones.

const CHUNK = 64 * 1024;
const TOTAL = 96 * 1024 * 1024;

test('when 96 MiB come through a held body in buffers of their own, then those read are freed as it goes: the buffers alive stay within 16 MiB', async () => {
  let sent = 0;
  const source = new Readable({
    read() {
      if (sent >= TOTAL) return void this.push(null);
      sent += CHUNK;
      // Its own memory, as a socket's read is (not a slice of Node's shared pool).
      this.push(Buffer.allocUnsafeSlow(CHUNK));
    },
  });
  const before = process.memoryUsage().arrayBuffers;
  let most = 0;
  let read = 0;
  for await (const chunk of heldBody(source) as AsyncIterable<Buffer>) {
    read += chunk.length;
    if (read % (1024 * 1024) === 0) most = Math.max(most, process.memoryUsage().arrayBuffers - before);
  }
  expect(read).toBe(TOTAL);
  expect(most).toBeLessThan(16 * 1024 * 1024);
});

test('when the work ends with 32 MiB of buffers no longer held, then they are freed shortly after', async () => {
  let held: Buffer[] | null = Array.from({ length: 32 }, () => Buffer.allocUnsafeSlow(1024 * 1024));
  const holding = process.memoryUsage().arrayBuffers;
  expect(held.length).toBe(32);
  held = null;
  workEnded(() => true);
  await sleep(500);
  expect(holding - process.memoryUsage().arrayBuffers).toBeGreaterThan(24 * 1024 * 1024);
});

test('when the heap in use is over 96 MB, then the work ending leaves the collection to V8: a whole one would stop the service for too long', async () => {
  // About 128 MB of numbers, alive while the work ends.
  let live: number[][] | null = Array.from({ length: 128 }, () => new Array<number>(128 * 1024).fill(1.5));
  let held: Buffer[] | null = Array.from({ length: 32 }, () => Buffer.allocUnsafeSlow(1024 * 1024));
  const holding = process.memoryUsage().arrayBuffers;
  expect(held.length + live.length).toBe(160);
  held = null;
  workEnded(() => true);
  await sleep(500);
  expect(holding - process.memoryUsage().arrayBuffers).toBeLessThan(8 * 1024 * 1024);
  live = null;
});

import { Readable } from 'node:stream';
import { heldBody } from '../src/net/read-ahead-body.ts';
import { runTsxScript } from './support/tsx-script.ts';

// Buffers outside V8's heap that the service is done with: a body read through Node's client comes
// in a buffer of its own for every 64 KiB, and those already read must be freed as the body goes
// on; what is left once the worker's downloads have ended must be freed then, not carried into the
// next ones, unless the heap is so large that a whole collection would stop the process too long.
// The ends of work run in a process of their own, whose heap this test sets (a jest worker's
// depends on the test files it ran before).

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

/**
 * In a process of its own: `liveMiB` of the heap in use, 32 MiB of buffers let go, the work ended;
 * how many bytes of buffers were freed 500 ms later, and how many whole collections were forced
 * (V8 may collect of its own accord as well: Node 24's does, for the buffers alone).
 */
async function afterWorkEnded(liveMiB: number): Promise<{ freed: number; forced: number }> {
  const script = `import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { workEnded } from './src/core/collect-buffers.ts';
let forced = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR && entry.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
  }
}).observe({ entryTypes: ['gc'] });
const live = Array.from({ length: ${liveMiB} }, () => new Array(128 * 1024).fill(1.5));
let held = Array.from({ length: 32 }, () => Buffer.allocUnsafeSlow(1024 * 1024));
const holding = process.memoryUsage().arrayBuffers;
held = null;
workEnded(() => true);
await sleep(500);
console.log(holding - process.memoryUsage().arrayBuffers, forced, live.length);`;
  let output = '';
  await runTsxScript(script, (chunk) => (output += chunk));
  const [freed, forced] = output.split(' ').map(Number) as [number, number];
  return { freed, forced };
}

test('when the work ends with 32 MiB of buffers no longer held, then a whole collection is forced and they are freed shortly after', async () => {
  const { freed, forced } = await afterWorkEnded(0);
  // V8 may free them of its own accord (Node 24's does): only the forced collection shows workEnded did it.
  expect(forced).toBeGreaterThan(0);
  expect(freed).toBeGreaterThan(24 * 1024 * 1024);
});

test('when the heap in use is over 96 MB, then the work ending leaves the collection to V8: a whole one would stop the process for too long', async () => {
  expect((await afterWorkEnded(128)).forced).toBe(0);
});

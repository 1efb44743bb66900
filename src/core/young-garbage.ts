import v8 from 'node:v8';
import vm from 'node:vm';

// Node's HTTP client reads a body 64 KiB at a time, each read into a buffer of its own outside V8's
// heap. V8 frees such a buffer only when it collects its young generation, which the JS heap
// filling up triggers, and a body's bytes barely fill it: a 28 MB file held some 30 MB more at the
// service's peak, until long after it was written. Collecting the young generation every few MB
// read (0.3 to 3 ms each) frees the buffers as they go. V8's gc() comes from a context of its own,
// so that the service needs no flag to start.
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as (options: { type: 'minor' }) => void;

const EVERY_BYTES = 4 * 1024 * 1024;
let sinceCollected = 0;

/** Counts bytes that came in buffers of their own, and has them collected every few MB. */
export function cameInOwnBuffers(bytes: number): void {
  sinceCollected += bytes;
  if (sinceCollected < EVERY_BYTES) return;
  sinceCollected = 0;
  collect({ type: 'minor' });
}

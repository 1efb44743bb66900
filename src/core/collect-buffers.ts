import v8 from 'node:v8';
import vm from 'node:vm';

// A download's buffers live outside V8's heap, and V8 frees them only when it collects their
// holders, which a download seldom makes it do; so this collects as they pile up
// (docs/performance.md). gc() comes from a context of its own, so that the service needs no flag.
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as (options?: { type: 'minor' }) => void;

/** Young buffers are collected this often. */
const YOUNG_EVERY_BYTES = 4 * 1024 * 1024;
/** Once work has ended, the whole heap is collected this much later, when whatever ended it has let go. */
const WHOLE_AFTER_MS = 200;
/** ...if buffers have grown by this much since it last was. */
const WHOLE_ABOVE_BYTES = 1024 * 1024;
/**
 * ...and the heap in use is no larger than this: a whole collection stops the main thread while it
 * marks, so a larger heap is left to V8, which marks mostly beside the main thread.
 */
const WHOLE_WITHIN_HEAP_BYTES = 96 * 1024 * 1024;

let sinceYoung = 0;
let afterWhole = process.memoryUsage().arrayBuffers;

/**
 * Counts bytes that came in buffers of their own (Node's HTTP client reads each 64 KiB of a body
 * into one), and collects the young generation every few MB of them.
 */
export function cameInOwnBuffers(bytes: number): void {
  sinceYoung += bytes;
  if (sinceYoung < YOUNG_EVERY_BYTES) return;
  sinceYoung = 0;
  collect({ type: 'minor' });
}

/**
 * The worker has no download left running: unless `idle` says one has started meanwhile, the whole
 * heap is collected shortly after, for the buffers that outlived a young collection while they
 * waited for the disk.
 */
export function workEnded(idle: () => boolean): void {
  setTimeout(() => {
    if (!idle()) return;
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    if (heapUsed > WHOLE_WITHIN_HEAP_BYTES || arrayBuffers < afterWhole + WHOLE_ABOVE_BYTES) return;
    collect();
    afterWhole = process.memoryUsage().arrayBuffers;
  }, WHOLE_AFTER_MS).unref();
}

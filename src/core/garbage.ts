import v8 from 'node:v8';
import vm from 'node:vm';

// A download's bytes pass through buffers outside V8's heap, which V8 frees only when it collects
// the objects that hold them, and a download makes few of the objects whose growth makes V8
// collect: left to itself, V8 lets such buffers grow by 64 MB before it collects the whole heap,
// and the service's memory grew with the size of a file and with the downloads before it. V8's
// gc() comes from a context of its own, so that the service needs no flag to start.
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as (options?: { type: 'minor' }) => void;

/** Young buffers are collected this often (0.3 to 3 ms each). */
const YOUNG_EVERY_BYTES = 4 * 1024 * 1024;
/** Once work has ended, the whole heap is collected this much later, when whatever ended it has let go. */
const WHOLE_AFTER_MS = 200;
/** ...if buffers have grown by this much since it last was. */
const WHOLE_ABOVE_BYTES = 1024 * 1024;
/**
 * ...and the heap in use is no larger than this. A whole collection stops the main thread while
 * it marks what is alive: 15 to 50 ms for the service's 45 to 55 MB (by machine), 60 to 75 ms for 190 MB. A
 * larger heap is left to V8, which marks mostly beside the main thread.
 */
const WHOLE_WITHIN_HEAP_BYTES = 96 * 1024 * 1024;

let sinceYoung = 0;
let afterWhole = process.memoryUsage().arrayBuffers;

/**
 * Counts bytes that came in buffers of their own (Node's HTTP client reads each 64 KiB of a body
 * into one), and collects the young generation every few MB of them: a 28 MB file read this way
 * left some 20 MB of them alive long after it was written.
 */
export function cameInOwnBuffers(bytes: number): void {
  sinceYoung += bytes;
  if (sinceYoung < YOUNG_EVERY_BYTES) return;
  sinceYoung = 0;
  collect({ type: 'minor' });
}

/**
 * The worker has no download left running: unless `idle` says one has started meanwhile, the whole
 * heap is collected shortly after. Many of a download's buffers outlive a young
 * collection while they wait for the disk; left for V8, they and the heap they grew made each
 * download start from 1 to 2 MB higher than the one before it.
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

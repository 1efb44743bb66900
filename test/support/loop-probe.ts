import { threadCpuMs, watchLoopStalls } from './loop-stalls.ts';

// Loaded into a service process (`node --import tsx --import ./test/support/loop-probe.ts`): it
// reports each stall of the process's event loop (loop-stalls.ts) as a line
// `loop-probe {"cpuMs":..,"wallMs":..}` on stderr, and `loop-probe {"alive":true}` every 200 ms. Where the main thread's CPU time cannot be read,
// a line says so once, and the wall time is all there is.

/** Stretches of less work than this are the loop's ordinary turns and not reported. */
const REPORT_CPU_MS = 10;
/** test/first-download.test.ts reads the lines by it. */
const PROBE_PREFIX = 'loop-probe ';

if (threadCpuMs() === undefined) process.stderr.write(`${PROBE_PREFIX}${JSON.stringify({ unavailable: 'no /proc/thread-self/schedstat' })}\n`);

watchLoopStalls((stall) => process.stderr.write(`${PROBE_PREFIX}${JSON.stringify(stall)}\n`), REPORT_CPU_MS);

// A sign of life every 200 ms, so that no stall reported is known from a probe that never ran.
setInterval(() => process.stderr.write(`${PROBE_PREFIX}${JSON.stringify({ alive: true })}\n`), 200).unref();

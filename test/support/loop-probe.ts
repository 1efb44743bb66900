import { readFileSync } from 'node:fs';

// Loaded into a service process (`node --import tsx --import ./test/support/loop-probe.ts`): it
// reports each stretch in which the process's main thread kept its event loop from turning, as a
// line `loop-probe {"cpuMs":..,"wallMs":..}` on stderr. A timer that should fire every 5 ms
// measures the stretch; what counts is the main thread's own CPU time in it, read from Linux's
// schedstat: the wall time also holds every moment the thread waited for a CPU, which on a
// loaded machine is most of it and says nothing about the service (a 300 ms stall of one run was
// 90 ms of work). Linux only; elsewhere the line says so once, and the wall time is all there is.

const TICK_MS = 5;
/** Stretches of less work than this are the loop's ordinary turns and not reported. */
const REPORT_CPU_MS = 10;
/** test/first-download.test.ts reads the lines by it. */
const PROBE_PREFIX = 'loop-probe ';

function schedstatCpuMs(): number | undefined {
  try {
    // The first field is the nanoseconds the thread has run on a CPU.
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

if (schedstatCpuMs() === undefined) process.stderr.write(`${PROBE_PREFIX}${JSON.stringify({ unavailable: 'no /proc/thread-self/schedstat' })}\n`);

let lastWall = performance.now();
let lastCpu = schedstatCpuMs() ?? 0;
setInterval(() => {
  const wall = performance.now();
  const cpu = schedstatCpuMs();
  const wallMs = wall - lastWall - TICK_MS;
  const cpuMs = cpu === undefined ? wallMs : cpu - lastCpu;
  if (cpuMs >= REPORT_CPU_MS) process.stderr.write(`${PROBE_PREFIX}${JSON.stringify({ cpuMs: Math.round(cpuMs), wallMs: Math.round(wallMs) })}\n`);
  lastWall = wall;
  lastCpu = cpu ?? 0;
}, TICK_MS).unref();

import { readFileSync } from 'node:fs';

// Each stretch in which this process's main thread kept its event loop from turning. A timer that
// should fire every 5 ms measures the stretch; what counts is the main thread's own CPU time in
// it, read from Linux's schedstat: the wall time also holds every moment the thread waited for a
// CPU, which on a loaded machine (the suite's other workers) is most of it and says nothing about
// the code under test (a 300 ms stall of one run was 90 ms of work). Linux only; elsewhere the CPU
// time is not known, and the wall time is all there is.

const TICK_MS = 5;

export type LoopStall = { cpuMs: number; wallMs: number };

/** The main thread's CPU time in ms; undefined where Linux's schedstat is not there. */
export function threadCpuMs(): number | undefined {
  try {
    // The first field is the nanoseconds the thread has run on a CPU.
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** Calls `onStall` with every stretch of at least `minCpuMs` of the main thread's work (its wall time where the CPU time is not known), until stopped. */
export function watchLoopStalls(onStall: (stall: LoopStall) => void, minCpuMs: number): () => void {
  let lastWall = performance.now();
  let lastCpu = threadCpuMs() ?? 0;
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = threadCpuMs();
    const wallMs = wall - lastWall - TICK_MS;
    const cpuMs = cpu === undefined ? wallMs : cpu - lastCpu;
    if (cpuMs >= minCpuMs) onStall({ cpuMs: Math.round(cpuMs), wallMs: Math.round(wallMs) });
    lastWall = wall;
    lastCpu = cpu ?? 0;
  }, TICK_MS).unref();
  return () => clearInterval(timer);
}

/** The longest stall, by the main thread's work in it, from now until `stop`. */
export function worstLoopStall(): { stop(): number } {
  let worst = 0;
  const stop = watchLoopStalls(({ cpuMs }) => (worst = Math.max(worst, cpuMs)), 0);
  return {
    stop() {
      stop();
      return worst;
    },
  };
}

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { worstLoopStall } from './loop-stalls.ts';

// What a hostile source must never do: stop the API answering. A probe asks the service a cheap
// question (an unknown download: validation, a query, a 404) over and over while a test runs, and
// remembers the slowest answer; the worst stall of the event loop is watched in the same process
// (loop-stalls.ts: by the main thread's work, which the load of the suite's other workers does not stretch).

export type Responsiveness = {
  /** Stops probing; the slowest probe in ms (a probe that got no answer counts as its timeout). */
  stop(): Promise<{ slowestMs: number; probes: number; worstLoopStallMs: number }>;
};

/** Probes `GET {serviceUrl}/downloads/<random id>` every `everyMs` until stopped. */
export function watchResponsiveness(serviceUrl: string, options: { everyMs?: number; timeoutMs?: number } = {}): Responsiveness {
  const everyMs = options.everyMs ?? 100;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const loop = worstLoopStall();
  let running = true;
  let slowestMs = 0;
  let probes = 0;
  const probing = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${serviceUrl}/downloads/${randomUUID()}`, { signal: AbortSignal.timeout(timeoutMs) });
        await res.arrayBuffer();
        if (res.status !== 404) throw new Error(`the probe answered ${res.status}`);
      } catch (error) {
        if ((error as Error).name !== 'TimeoutError') throw error;
      }
      slowestMs = Math.max(slowestMs, performance.now() - started);
      probes += 1;
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await probing;
      return { slowestMs, probes, worstLoopStallMs: loop.stop() };
    },
  };
}

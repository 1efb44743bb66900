import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

// What a hostile source must never do: stop the API answering. A probe asks the service a cheap
// question (an unknown download: validation, a query, a 404) over and over while a test runs, and
// remembers the slowest answer; the event loop's worst delay is watched in the same process.

export type Responsiveness = {
  /** Stops probing; the slowest probe in ms (a probe that got no answer counts as its timeout). */
  stop(): Promise<{ slowestMs: number; probes: number; worstLoopDelayMs: number }>;
};

/** Probes `GET {serviceUrl}/downloads/<random id>` every `everyMs` until stopped. */
export function watchResponsiveness(serviceUrl: string, options: { everyMs?: number; timeoutMs?: number } = {}): Responsiveness {
  const everyMs = options.everyMs ?? 100;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
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
      loop.disable();
      return { slowestMs, probes, worstLoopDelayMs: loop.max / 1e6 };
    },
  };
}

import { readFile, writeFile } from 'node:fs/promises';

// Resident memory of another process, from Linux's /proc. The kernel keeps the peak (VmHWM) and
// lets it be reset, which is exact where sampling could miss a short spike; sampling stays as the
// fallback where the reset is not allowed.

const SAMPLE_MS = 10;

async function statusField(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!match) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(match[1]) * 1024;
}

export const residentBytes = (pid: number) => statusField(pid, 'VmRSS');

type PeakWatch = { stop(): Promise<number> };

/** Starts watching `pid`; stop() returns the most it held in memory since. */
export async function watchPeakRss(pid: number): Promise<PeakWatch> {
  // 5 resets the peak resident set size to the current one (proc(5), clear_refs).
  const exact = await writeFile(`/proc/${pid}/clear_refs`, '5').then(
    () => true,
    () => false,
  );
  let sampled = await residentBytes(pid);
  const timer = setInterval(() => {
    residentBytes(pid).then(
      (bytes) => (sampled = Math.max(sampled, bytes)),
      () => {},
    );
  }, SAMPLE_MS);
  return {
    async stop() {
      clearInterval(timer);
      return exact ? Math.max(sampled, await statusField(pid, 'VmHWM')) : sampled;
    },
  };
}

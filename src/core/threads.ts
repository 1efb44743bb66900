import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running `entry`, a module's TypeScript source beside its caller: its compiled
 * `.js` when the service runs from dist/, the source itself through tsx otherwise (a thread does
 * not inherit the loader of the thread that started it).
 */
export function startThread(entry: URL, options: Omit<WorkerOptions, 'workerData' | 'execArgv'> = {}): Worker {
  // Not the process's own flags: modules it preloads (`--import`) are for its main thread.
  const own = { ...options, execArgv: [] };
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL(entry.href.replace(/\.ts$/, '.js')), own);
  return new Worker(new URL('./typescript-thread.mjs', import.meta.url), { ...own, workerData: { entry: entry.href } });
}

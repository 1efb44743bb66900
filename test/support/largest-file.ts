import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The largest file seen under `dir` (at any depth) until stopped, looked at every few milliseconds. */
export function watchLargestFile(dir: string): { stop(): Promise<number> } {
  let largest = 0;
  let running = true;
  const watching = (async () => {
    while (running) {
      const names = await readdir(dir, { recursive: true }).catch(() => []);
      for (const name of names) {
        const size = await stat(path.join(dir, name)).then(
          (stats) => (stats.isFile() ? stats.size : 0),
          () => 0,
        );
        largest = Math.max(largest, size);
      }
      await sleep(2);
    }
  })();
  return {
    async stop() {
      running = false;
      await watching;
      return largest;
    },
  };
}

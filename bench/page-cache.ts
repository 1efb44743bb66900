import { createReadStream } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { timedRun } from './processes.ts';

// The kernel's page cache, emptied once before anything is measured, then filled again with the
// media the sources serve. On a machine whose memory the cache of earlier work had filled (18 of
// 24 GB), writing 300 MB took either about 0.4 s or 0.7 to 1 s, round after round, for curl and
// the service alike; with the cache emptied first every round took the faster time. Needs root
// (`/proc/sys/vm/drop_caches`); elsewhere the run goes on with the cache as it is, and says so.

/** Whether the cache could be emptied; the files under `mediaDir` are read back into it either way. */
export async function freshPageCache(sync: string | null, mediaDir: string): Promise<boolean> {
  if (sync) await timedRun(sync, []);
  // 1: the clean page cache only; dirty pages were written out just before.
  const emptied = await writeFile('/proc/sys/vm/drop_caches', '1').then(
    () => true,
    () => false,
  );
  const files = (await readdir(mediaDir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  for (const file of files) {
    await pipeline(createReadStream(path.join(file.parentPath, file.name)), new Writable({ write: (_chunk, _encoding, done) => done() }));
  }
  return emptied;
}

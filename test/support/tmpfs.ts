import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

// A disk that fills: a tmpfs of a given size. Mounting one needs root, as CI and the development
// machines have (docs/development.md); elsewhere the tests that fill a disk fail and say why,
// rather than pass unseen.

const run = promisify(execFile);

/** Mounts a tmpfs of `size` (`1m`, `200k`) on the folder `dir`. */
export async function mountTmpfs(dir: string, size: string): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('Filling a disk mounts a tmpfs, which needs root: run the suite as root, as CI does.');
  await run('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
}

export async function unmountTmpfs(dir: string): Promise<void> {
  await run('umount', [dir]);
}

import { spawn } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { imageExists, podman, run } from './podman.ts';

// No image registry answers here, so the image is built on a base made on this machine: Debian
// bookworm from the machine's own package sources (mmdebstrap), with Node 24 and npm laid out in
// /usr/local as in the official node image. Made once; later runs reuse it.

export const LOCAL_BASE = 'localhost/vds-node-base:24-bookworm';

// As Debian's slim images: no manuals, documentation or translations, in the base and in what the
// image installs on it (mmdebstrap keeps these in the base's dpkg settings).
const SLIM = ['/usr/share/doc/*', '/usr/share/man/*', '/usr/share/info/*', '/usr/share/locale/*', '/usr/share/lintian/*'].flatMap((glob) => [
  '--dpkgopt',
  `path-exclude=${glob}`,
]);

/** node@24 and npm from the npm registry, as a tree to copy to /usr/local. */
async function nodeTree(scratch: string): Promise<string> {
  const prefix = path.join(scratch, 'npm');
  const install = await run('npm', ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', 'node@24', 'npm@11']);
  if (install.code !== 0) throw new Error(`npm install node@24 npm@11 failed:\n${install.stderr}`);
  const local = path.join(scratch, 'local');
  await mkdir(path.join(local, 'bin'), { recursive: true });
  await mkdir(path.join(local, 'lib', 'node_modules'), { recursive: true });
  await copyFile(path.join(prefix, 'node_modules', 'node', 'bin', 'node'), path.join(local, 'bin', 'node'));
  await cp(path.join(prefix, 'node_modules', 'npm'), path.join(local, 'lib', 'node_modules', 'npm'), { recursive: true });
  await symlink('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin', 'npm'));
  await symlink('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin', 'npx'));
  return local;
}

/** The local base's name, made first when podman does not have it. */
export async function localBase(): Promise<{ name: string; made: boolean }> {
  if (await imageExists(LOCAL_BASE)) return { name: LOCAL_BASE, made: false };
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-image-base-'));
  try {
    const local = await nodeTree(scratch);
    // /usr merged as in Debian's own images, by mmdebstrap's hook rather than the usrmerge package, which brings perl.
    const mergedUsr = '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr';
    const args = ['--variant=minbase', '--include=ca-certificates', mergedUsr, ...SLIM, '--customize-hook', `sync-in ${local} /usr/local`, 'bookworm', '-'];
    const debootstrap = spawn('mmdebstrap', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    debootstrap.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const made = new Promise<number | null>((resolve, reject) => {
      debootstrap.once('error', reject);
      debootstrap.once('close', resolve);
    });
    const imported = podman(['import', '-', LOCAL_BASE], { input: debootstrap.stdout });
    const code = await made;
    if (code !== 0) throw new Error(`mmdebstrap exited ${code}:\n${log.trim().split('\n').slice(-20).join('\n')}`);
    await imported;
    return { name: LOCAL_BASE, made: true };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

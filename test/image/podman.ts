import { spawn } from 'node:child_process';

// podman as this kind of machine allows it: Debian's runc (crun refuses the hybrid cgroups) with
// cgroupfs, and limits no higher than they are (raising one is not permitted here).
const RUNTIME = ['--runtime', 'runc', '--cgroup-manager', 'cgroupfs'];
export const LIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];

export type Run = { code: number | null; stdout: string; stderr: string };

/** Runs a command to its end; `input` is piped to its standard input. */
export function run(command: string, args: readonly string[], options: { input?: NodeJS.ReadableStream; echo?: boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [options.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (options.echo) process.stdout.write(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (options.echo) process.stderr.write(chunk);
    });
    if (options.input) options.input.pipe(child.stdin!);
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** podman with this machine's runtime settings, to its end, whatever its exit code. */
export function podmanRun(args: readonly string[], options: { input?: NodeJS.ReadableStream; echo?: boolean } = {}): Promise<Run> {
  return run('podman', [...RUNTIME, ...args], options);
}

/** podman with this machine's runtime settings; fails with its output unless it exits 0. */
export async function podman(args: readonly string[], options: { input?: NodeJS.ReadableStream; echo?: boolean } = {}): Promise<string> {
  const done = await podmanRun(args, options);
  if (done.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${done.code}:\n${(done.stderr || done.stdout).trim()}`);
  return done.stdout.trim();
}

/** Whether podman has an image of that name. */
export async function imageExists(name: string): Promise<boolean> {
  return (await podmanRun(['image', 'exists', name])).code === 0;
}

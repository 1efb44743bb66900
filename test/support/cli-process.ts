import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// `vds` as a person runs it: the compiled CLI (dist/ is built by the test run's global setup) as a
// process, its output piped as in a script.

export const cli = fileURLToPath(new URL('../../dist/src/cli/index.js', import.meta.url));

export type Run = { code: number | null; stdout: string; stderr: string };

export type Started = { done: Promise<Run>; stderrSoFar(): string; kill(signal: NodeJS.Signals): void };

/** Runs `vds args` in `cwd`, with `env` over the test's own. */
export function startCli(args: string[], cwd: string, env: Record<string, string>): Started {
  const child = spawn(process.execPath, [cli, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return {
    done: new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr }))),
    stderrSoFar: () => stderr,
    kill: (signal) => child.kill(signal),
  };
}

/** Runs `vds args` in `cwd` on a pseudo-terminal (util-linux's `script`), as a person's shell would; its exit code and what it drew. */
export function runOnTerminal(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, cli, ...args].map((arg) => `'${arg}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

/** Piped output is for logs and scripts: plain lines, not one control character (no escape, no carriage return). */
export function expectPlain(run: Run): void {
  for (const text of [run.stdout, run.stderr]) expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
}

import { spawn } from 'node:child_process';
import { projectRoot } from '../../src/config/paths.ts';

/**
 * Runs `script` (an ES module that may import the project's TypeScript by paths from its root) in a
 * process of its own, handing each chunk of its stdout to `onStdout` as it arrives; fails with its
 * stderr when it exits with anything but 0.
 */
export function runTsxScript(script: string, onStdout: (chunk: string) => void): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => onStdout(chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
  return new Promise((resolve, reject) => child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`exited with ${code}: ${errors}`)))));
}

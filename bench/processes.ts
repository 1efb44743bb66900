import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { findExecutable } from '../src/core/executables.ts';

// Every server of the benchmark runs in a process of its own, so that the load generator in this
// process never competes with the one it measures for an event loop.

export type Server = { pid: number; url: string; stop(): Promise<void> };

const READY_TIMEOUT_MS = 60_000;
const LISTENING = /listening on (http:\/\/\S+)/;

/**
 * Starts a server process and waits until it is ready: until it prints `listening on <url>`, or,
 * for a server that says nothing (nginx), until `port` accepts connections.
 */
export function startServer(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; log: string; port?: number }): Promise<Server> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(options.log);
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let output = '';
    let settled = false;
    const settle = (outcome: { url: string } | { error: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if ('url' in outcome) {
        resolve({ pid: child.pid!, url: outcome.url, stop: () => stop(child, exited) });
        return;
      }
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(command)} ${outcome.error}; its output is in ${options.log}:\n${output.slice(-2000)}`));
    };
    const timer = setTimeout(() => settle({ error: `was not ready after ${READY_TIMEOUT_MS / 1000} s` }), READY_TIMEOUT_MS);
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
      const match = options.port === undefined ? LISTENING.exec(output) : null;
      if (match) settle({ url: match[1]! });
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('exit', (code) => settle({ error: `exited with ${code} before it was ready` }));
    child.once('error', (error) => settle({ error: `could not start: ${error.message}` }));
    if (options.port !== undefined) {
      const port = options.port;
      void untilAccepting(port, () => settled).then(() => settle({ url: `http://127.0.0.1:${port}` }));
    }
  });
}

async function untilAccepting(port: number, givenUp: () => boolean): Promise<void> {
  while (!givenUp()) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepted) return;
    await sleep(50);
  }
}

/** SIGTERM, then SIGKILL if the process is still there after a grace period. */
async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(killer);
}

/** Runs a command (in `cwd`, when given) to its end; returns how long it took and fails with its output when it fails. */
export function timedRun(command: string, args: string[], cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(performance.now() - started);
      else reject(new Error(`${path.basename(command)} ${args.join(' ')}${cwd ? ` (in ${cwd})` : ''} exited with ${code}:\n${stderr}`));
    });
  });
}

/** An optional tool: its path when it is on PATH, else null. */
export const onPath = (name: string): string | null => findExecutable([name]);

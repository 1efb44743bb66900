import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { projectRoot } from '../../src/config/paths.ts';
import { createHttp, pollStatus, type Download, type DownloadStatus, type TestHttp } from './api.ts';

// The service as `npm start` runs it, in a process of its own: what only a real process can show
// (a kill -9 that runs no shutdown code at all) is tested against this, not against startService.

export type ServiceProcess = {
  url: string;
  http: TestHttp;
  waitForStatus(id: string, statuses: DownloadStatus[], timeoutMs?: number): Promise<Download>;
  /** Everything the process printed, for the message of a failing test. */
  output(): string;
  /** Sends `signal` (default SIGKILL) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Sends `signal` (default SIGINT, as Ctrl-C in a terminal) to the process's whole group; resolves with its exit code. */
  signalGroup(signal?: NodeJS.Signals): Promise<number | null>;
};

const children = new Set<ChildProcess>();

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const done = exited(child);
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  return done;
}

export type SpawnOptions = {
  /** Modules to load before the service (`--import`), paths relative to the project. */
  preload?: string[];
  /**
   * Wait for the line saying the service listens instead of asking it HTTP requests: a test of
   * what the first requests cost must make them itself.
   */
  readyWhenLogged?: boolean;
};

/**
 * Starts `node --import tsx src/main.ts` with `env` on top of a minimal environment (so that no
 * setting of the machine running the tests leaks in) and a free port of 127.0.0.1, and waits until
 * it answers HTTP (or, with `ROLE=worker`, which listens on no port, until it says it started).
 * Pair with `killServiceProcesses()` in afterAll.
 */
export async function spawnServiceProcess(env: Record<string, string>, timeoutMs = 30_000, options: SpawnOptions = {}): Promise<ServiceProcess> {
  const port = await getPort({ host: '127.0.0.1' });
  const preload = (options.preload ?? []).flatMap((module) => ['--import', `./${module}`]);
  const child = spawn(process.execPath, ['--import', 'tsx', ...preload, 'src/main.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own, as a command a terminal runs in the foreground: what the service starts
    // and a signal to the whole group can be told apart from the test runner.
    detached: true,
  });
  children.add(child);
  void exited(child).then(() => children.delete(child));
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the service exited (${child.exitCode ?? child.signalCode}) before answering:\n${printed}`);
    }
    // Any answer will do: the API listens only once migrations, queue and worker are up.
    const answered =
      env.ROLE === 'worker'
        ? printed.includes('worker started')
        : options.readyWhenLogged
          ? printed.includes('video download service listening on')
          : await fetch(`${url}/downloads/00000000-0000-4000-8000-000000000000`).then(
              () => true,
              () => false,
            );
    if (answered) break;
    if (Date.now() >= deadline) {
      await kill(child, 'SIGKILL');
      throw new Error(`the service did not answer within ${timeoutMs} ms:\n${printed}`);
    }
    await sleep(100);
  }

  const http = createHttp(url);
  return {
    url,
    http,
    waitForStatus: (id, statuses, waitMs = 30_000) => pollStatus(http, id, statuses, waitMs),
    output: () => printed,
    kill: (signal = 'SIGKILL') => kill(child, signal),
    signalGroup: async (signal = 'SIGINT') => {
      const done = exited(child);
      process.kill(-child.pid!, signal);
      await done;
      return child.exitCode;
    },
  };
}

/** Kills every process this file started that is still running, whatever state the test left. */
export async function killServiceProcesses(): Promise<void> {
  await Promise.all([...children].map((child) => kill(child, 'SIGKILL')));
}

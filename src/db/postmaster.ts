import { spawn } from 'node:child_process';
import { childEnvironment } from '../core/child-env.ts';

// The embedded PostgreSQL server runs in a process group of its own. Ctrl-C in a terminal signals
// the whole foreground group: had the database been in the service's group, it would have shut
// down at the same moment as the service, under the running downloads that checkpoint into it on
// their way out. Apart, only the service hears the signal, and it stops the database last.

const READY = 'database system is ready to accept connections';

export type Postmaster = { pid: number; stop(): Promise<void> };

export type PostmasterOptions = {
  binary: string;
  databaseDir: string;
  port: number;
  /** The user to run as: PostgreSQL refuses to run as root. */
  ids?: { uid: number; gid: number };
  log(line: string): void;
};

/** Starts the server and resolves once it accepts connections; rejects when it ends before that. */
export function startPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const child = spawn(options.binary, ['-D', options.databaseDir, '-p', String(options.port), '-c', 'listen_addresses=127.0.0.1'], {
    ...options.ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // The readiness line is matched in English.
    env: childEnvironment({ LC_MESSAGES: 'C' }),
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A service that ends without stopping it (a crash) still asks for a fast shutdown on its way out.
  const stopOnExit = () => child.kill('SIGINT');
  process.once('exit', stopOnExit);
  const stop = async () => {
    process.off('exit', stopOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    await exited;
  };
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    void exited.then(() => {
      process.off('exit', stopOnExit);
      reject(new Error(`postgres exited (${child.exitCode ?? child.signalCode})`));
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      options.log(text);
      if (text.includes(READY)) resolve({ pid: child.pid!, stop });
    });
  });
}

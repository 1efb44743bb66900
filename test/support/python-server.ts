import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort from 'get-port';
import { decodedPath } from './request-target.ts';

// Python's own file server, as the README's walk-through runs it: `python3 -m http.server`, which
// speaks HTTP/1.0 (one response per connection, no keep-alive), ignores Range and knows no ETag.
// It logs every request line to stderr, which is how a test learns what it was asked for.

export type PythonRequest = {
  method: string;
  /** The request target exactly as it was sent (percent-encoded, with any query string). */
  target: string;
  /** `target` without its query string, percent-decoded. */
  path: string;
  status: number;
};

export type PythonServer = {
  url: string;
  /** Every request line logged so far, in the order python logged them. */
  requests(): PythonRequest[];
  /** Everything python printed (request lines, tracebacks of connections that broke). */
  output(): string;
  stop(): Promise<void>;
};

// 127.0.0.1 - - [25/Nov/2026 09:52:01] "GET /clip.mp4 HTTP/1.1" 200 -
const REQUEST_LINE = /^\S+ - - \[[^\]]*\] "(\S+) (\S+) HTTP\/[\d.]+" (\d{3}) /;

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    // A bare connect, closed at once: python logs nothing for a connection that sent no request.
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts `python3 -m http.server` on a free port of 127.0.0.1, serving `dir`, and waits until it accepts connections. */
export async function startPythonServer(dir: string): Promise<PythonServer> {
  const port = await getPort({ host: '127.0.0.1' });
  const child = spawn('python3', ['-u', '-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', PYTHONUNBUFFERED: '1', LANG: 'C.UTF-8' },
  });
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  for (let waited = 0; !(await accepts(port)); waited += 50) {
    if (child.exitCode !== null) throw new Error(`python3 -m http.server exited (${child.exitCode}):\n${printed}`);
    if (waited > 10_000) {
      await stop();
      throw new Error(`python3 -m http.server did not accept connections within 10 s:\n${printed}`);
    }
    await sleep(50);
  }
  const requests = () =>
    printed.split('\n').flatMap((line) => {
      const match = REQUEST_LINE.exec(line);
      if (!match) return [];
      const [, method, target, status] = match;
      return [{ method: method!, target: target!, path: decodedPath(target!), status: Number(status) }];
    });
  return { url: `http://127.0.0.1:${port}`, requests, output: () => printed, stop };
}

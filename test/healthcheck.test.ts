import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { projectRoot } from '../src/config/paths.ts';
import { startTestService } from './support/api.ts';
import { unusedPort } from './support/ports.ts';

// The container image's health check (src/healthcheck.ts, run by the Containerfile's HEALTHCHECK):
// it must find the service wherever HOST and PORT put it, under BASE_PATH, and fail rather than
// hang when the service does not answer.

type Checked = { code: number | null; ms: number };

/** Runs the health check with only these settings, as the container's environment gives them. */
function healthCheck(env: Record<string, string>): Promise<Checked> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/healthcheck.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, ...env },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, ms: Date.now() - started })));
}

/** A server on `host` whose /readyz answers `status`, or nothing at all when `status` is null. */
async function readyzServer(host: string, status: number | null): Promise<{ port: number; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    if (status !== null) res.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    paths,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

test('when the service listens on ::1 under a BASE_PATH, then the health check finds it ready', async () => {
  const app = await startTestService({ host: '::1', basePath: '/api' });
  try {
    const port = new URL(app.service.url).port;
    expect(await healthCheck({ HOST: '::1', PORT: port, BASE_PATH: '/api' })).toMatchObject({ code: 0 });
    // The same service asked at the wrong address is not ready.
    expect(await healthCheck({ HOST: '127.0.0.1', PORT: port, BASE_PATH: '/api' })).toMatchObject({ code: 1 });
  } finally {
    await app.stop();
  }
});

test.each([
  ['0.0.0.0', '127.0.0.1'],
  ['::', '::1'],
])('when HOST is the wildcard %s, then the health check asks its loopback address %s', async (wildcard, loopback) => {
  const server = await readyzServer(loopback, 200);
  try {
    expect(await healthCheck({ HOST: wildcard, PORT: String(server.port) })).toMatchObject({ code: 0 });
    expect(server.paths).toEqual(['/readyz']);
  } finally {
    await server.close();
  }
});

test('when /readyz answers 503, then the health check fails', async () => {
  const server = await readyzServer('127.0.0.1', 503);
  try {
    expect(await healthCheck({ HOST: '127.0.0.1', PORT: String(server.port) })).toMatchObject({ code: 1 });
    expect(server.paths).toEqual(['/readyz']);
  } finally {
    await server.close();
  }
});

test('when nothing listens, or the service never answers, then the health check fails within its own time limit', async () => {
  expect(await healthCheck({ HOST: '127.0.0.1', PORT: String(await unusedPort()) })).toMatchObject({ code: 1 });
  const silent = await readyzServer('127.0.0.1', null);
  try {
    const checked = await healthCheck({ HOST: '127.0.0.1', PORT: String(silent.port) });
    expect(checked.code).toBe(1);
    // Its 4 s limit, well inside the 10 s the Containerfile gives it.
    expect(checked.ms).toBeLessThan(9000);
  } finally {
    await silent.close();
  }
});

// npm run test:image: builds the container image (Containerfile) on a base made on this machine,
// runs it against the PostgreSQL at 127.0.0.1:5432 with the host's network, checks that it runs as
// a user other than root and that its health check passes, makes one download end to end from a
// file served on the host (compared by sha256), and stops it with SIGTERM, which must end it
// cleanly. Prints how long the build took and how large the image is.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttp, pollStatus, type Download } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runFfmpeg } from '../support/ffmpeg.ts';
import { startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';
import { sha256File } from '../support/media.ts';
import { unusedPort } from '../support/ports.ts';
import { ADMIN_DATABASE_URL_ENV } from '../support/published-env.ts';
import { localBase } from './local-base.ts';
import { LIMITS, podman, podmanRun, run } from './podman.ts';

const IMAGE = 'localhost/video-download-service:test';
const ROOT = path.resolve(import.meta.dirname, '../..');
const READY_TIMEOUT_MS = 90_000;
const DOWNLOAD_TIMEOUT_MS = 60_000;
// Below podman's stop timeout, so that a service that ignored SIGTERM is killed and shows as such.
const STOP_TIMEOUT_SECONDS = 30;
const NEEDED = { podman: 'podman', runc: 'runc', mmdebstrap: 'mmdebstrap' };

class Failure extends Error {}
const since = (start: number) => `${((Date.now() - start) / 1000).toFixed(1)} s`;
const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;

async function requireTools(): Promise<void> {
  const missing: string[] = [];
  for (const [tool, pkg] of Object.entries(NEEDED)) if ((await run('sh', ['-c', `command -v ${tool}`])).code !== 0) missing.push(pkg);
  if (missing.length) throw new Failure(`missing: ${missing.join(' ')} (apt-get install -y ${missing.join(' ')})`);
}

/** The host's certificate authorities, for builders behind a proxy that signs TLS with one of its own. */
function caSecret(): string[] {
  const bundle = process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt';
  return existsSync(bundle) ? ['--secret', `id=ca-certificates,src=${bundle}`] : [];
}

async function build(base: string): Promise<number> {
  const start = Date.now();
  // Debian's yt-dlp: PyPI cannot be reached from here.
  await podman(
    [
      'build',
      '--format',
      'docker',
      '--network',
      'host',
      ...LIMITS,
      ...caSecret(),
      '--build-arg',
      `BASE=${base}`,
      '--build-arg',
      'YTDLP=debian',
      '-t',
      IMAGE,
      '-f',
      'Containerfile',
      ROOT,
    ],
    { echo: process.env.IMAGE_BUILD_OUTPUT === 'show' },
  );
  return Date.now() - start;
}

async function imageFacts(name: string): Promise<{ size: number; user: string; health: string[] }> {
  const [inspected] = JSON.parse(await podman(['image', 'inspect', name])) as [{ Size: number; User?: string; Healthcheck?: { Test?: string[] } }];
  return { size: inspected.Size, user: inspected.User ?? '', health: inspected.Healthcheck?.Test ?? [] };
}

async function testVideo(dir: string): Promise<string> {
  const file = path.join(dir, 'image-test.mp4');
  await runFfmpeg([
    ...['-f', 'lavfi', '-i', 'testsrc=duration=3:size=320x240:rate=25', '-f', 'lavfi', '-i', 'sine=duration=3'],
    ...['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-movflags', '+faststart', file],
  ]);
  return file;
}

async function logsOf(container: string): Promise<string> {
  const logs = await podmanRun(['logs', container]);
  return `--- container output\n${(logs.stdout + logs.stderr).trim().split('\n').slice(-40).join('\n')}\n---`;
}

async function waitUntilReady(container: string, origin: string): Promise<{ yt_dlp?: string | null }> {
  const start = Date.now();
  for (;;) {
    const state = await podman(['inspect', '--format', '{{.State.Status}}', container]);
    if (state !== 'running') throw new Failure(`the container is ${state} before /readyz answered\n${await logsOf(container)}`);
    const response = await fetch(`${origin}/readyz`).catch(() => undefined);
    const status = response?.status ?? 0;
    if (status === 200) return (await response!.json()) as { yt_dlp?: string | null };
    if (Date.now() - start > READY_TIMEOUT_MS)
      throw new Failure(`/readyz did not answer 200 within ${READY_TIMEOUT_MS / 1000} s (last: ${status})\n${await logsOf(container)}`);
    await sleep(250);
  }
}

/** One download through the API of the container, polled with the suite's client until it completes. */
async function downloadThrough(origin: string, url: string, container: string): Promise<Download> {
  const http = createHttp(origin);
  const created = await http.createDownload({ url });
  if (created.status !== 202) throw new Failure(`POST /downloads answered ${created.status}: ${JSON.stringify(created.body)}`);
  try {
    return await pollStatus(http, (created.body as Download).id, ['completed'], DOWNLOAD_TIMEOUT_MS);
  } catch (error) {
    throw new Failure(`${(error as Error).message}\n${await logsOf(container)}`);
  }
}

async function main(): Promise<void> {
  await requireTools();
  process.env[ADMIN_DATABASE_URL_ENV] ??= process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-image-test-'));
  const container = `vds-image-test-${randomBytes(4).toString('hex')}`;
  let database: TestDatabase | undefined;
  let source: FixtureServer | undefined;
  try {
    let start = Date.now();
    const base = await localBase();
    const baseSize = (await imageFacts(base.name)).size;
    console.log(`base ${base.name}: ${base.made ? `made in ${since(start)}` : 'reused'} (${megabytes(baseSize)})`);

    const buildMs = await build(base.name);
    const image = await imageFacts(IMAGE);
    console.log(`image built in ${(buildMs / 1000).toFixed(1)} s: ${megabytes(image.size)}`);
    if (!image.user || image.user === 'root' || image.user === '0') throw new Failure(`the image runs as ${image.user || 'root'}`);
    if (image.health.length === 0 || image.health[0] === 'NONE') throw new Failure('the image has no health check');

    // Files the image leaves out (Containerfile) must be none that ffmpeg or Node loads.
    const libraries = await podman(['run', '--rm', ...LIMITS, '--entrypoint', 'ldd', IMAGE, '/usr/bin/ffmpeg', '/usr/bin/ffprobe', '/usr/local/bin/node']);
    const missing = libraries.split('\n').filter((line) => line.includes('not found'));
    if (missing.length) throw new Failure(`libraries missing from the image:\n${missing.join('\n')}`);

    // The image has no embedded PostgreSQL: without DATABASE_URL it must say so and stop.
    const alone = await podmanRun(['run', '--rm', ...LIMITS, '--health-interval', 'disable', '--network', 'none', IMAGE]);
    if (alone.code !== 1 || !alone.stderr.includes('set DATABASE_URL')) {
      throw new Failure(`without DATABASE_URL the container exited ${alone.code}, not 1 saying to set it:\n${(alone.stdout + alone.stderr).trim()}`);
    }

    // Nor should it advise unsetting DATABASE_URL when a database cannot be used.
    const refused = await podmanRun([
      'run',
      '--rm',
      ...LIMITS,
      '--health-interval',
      'disable',
      '--network',
      'host',
      '--env',
      `DATABASE_URL=postgresql://postgres@127.0.0.1:${await unusedPort()}/none`,
      IMAGE,
    ]);
    if (refused.code !== 1 || !refused.stderr.includes('check DATABASE_URL.')) {
      throw new Failure(
        `with a database that cannot be reached the container exited ${refused.code}, not 1 saying to check DATABASE_URL alone:\n${(refused.stdout + refused.stderr).trim()}`,
      );
    }

    database = await createTestDatabase();
    source = await startFixtureServer();
    const video = await testVideo(scratch);
    const url = source.file('/image-test.mp4', video);
    const port = await unusedPort();
    const origin = `http://127.0.0.1:${port}`;
    start = Date.now();
    await podman([
      ...['run', '--detach', '--name', container, '--network', 'host', ...LIMITS],
      // The health check runs when asked (below): podman's timer for it needs systemd.
      ...['--health-interval', 'disable'],
      ...['--env', `DATABASE_URL=${database.url}`, '--env', 'HOST=127.0.0.1', '--env', `PORT=${port}`, '--env', 'ALLOW_PRIVATE_ADDRESSES=true'],
      IMAGE,
    ]);
    const ready = await waitUntilReady(container, origin);
    if (!ready.yt_dlp) throw new Failure(`/readyz reports no yt-dlp: ${JSON.stringify(ready)}`);
    console.log(`ready in ${since(start)}, with yt-dlp ${ready.yt_dlp}`);

    const health = await podmanRun(['healthcheck', 'run', container]);
    if (health.code !== 0) throw new Failure(`the health check failed: ${(health.stdout + health.stderr).trim()}`);
    const users = await podman(['top', container, 'user', 'args']);
    const service = users.split('\n').find((line) => line.includes('dist/src/main.js'));
    if (!service || /^\s*root\s/.test(service)) throw new Failure(`the service does not run as a user other than root:\n${users}`);
    console.log(`health check passed; the service runs as ${service.trim().split(/\s+/)[0]}`);

    start = Date.now();
    const done = await downloadThrough(origin, url, container);
    const expected = await sha256File(video);
    const fetched = Buffer.from(await (await fetch(done.download_url!)).arrayBuffer());
    const original = await readFile(video);
    if (!fetched.equals(original)) throw new Failure(`the file fetched back (${fetched.length} bytes) is not the ${original.length} bytes served`);
    if (done.file?.sha256 !== expected) throw new Failure(`file.sha256 is ${done.file?.sha256}, not ${expected}`);
    console.log(`one download end to end (${original.length} bytes, sha256 ${expected.slice(0, 12)}…) in ${since(start)}`);

    start = Date.now();
    await podman(['stop', '--time', String(STOP_TIMEOUT_SECONDS), container]);
    const exit = await podman(['inspect', '--format', '{{.State.ExitCode}}', container]);
    const logs = await logsOf(container);
    if (exit !== '0') throw new Failure(`the container exited ${exit} on SIGTERM\n${logs}`);
    if (!logs.includes('SIGTERM: shutting down')) throw new Failure(`the service did not say it stopped on SIGTERM\n${logs}`);
    console.log(`stopped on SIGTERM in ${since(start)}, exit code 0`);
    console.log(`\nbuild ${(buildMs / 1000).toFixed(1)} s, image ${megabytes(image.size)} (base ${megabytes(baseSize)})`);
  } finally {
    await podmanRun(['rm', '--force', '--volumes', container]);
    await source?.close();
    await database?.drop();
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(`test:image FAILED: ${error instanceof Failure ? error.message : (error as Error).stack}`);
  process.exitCode = 1;
});

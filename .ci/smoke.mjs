// The smoke test CI runs on the oldest supported Node, and proof that `dependencies` in
// package.json hold everything the service needs at run time: a copy of the checkout is installed
// the way a container build installs it (`npm ci`, which builds dist/ in `prepare`, then
// `npm prune --omit=dev`), started with `npm start` on its embedded PostgreSQL, asked for a
// download that does not exist (404 means migrations, queue, worker and API all came up), then
// for one real download end to end (a video made with ffmpeg, served on 127.0.0.1, fetched back
// through its link and compared byte for byte), stopped with SIGTERM, and must then have left no
// process behind. Plain Node, no dependencies: it runs before and apart from them.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const START_TIMEOUT_MS = 45_000;
const DOWNLOAD_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;
const root = path.resolve(import.meta.dirname, '..');
const since = (start) => `${((Date.now() - start) / 1000).toFixed(1)} s`;

class Failure extends Error {}

function fail(message, output = '') {
  throw new Failure(`omit-dev start FAILED: ${message}${output ? `\n--- output\n${output.trimEnd()}\n---` : ''}`);
}

/** A node_modules above the copy would lend it packages that its own install does not have. */
function checkNoModulesAbove(dir) {
  for (let parent = path.dirname(dir); ; parent = path.dirname(parent)) {
    if (existsSync(path.join(parent, 'node_modules'))) fail(`${parent}/node_modules would be visible to the copy; set TMPDIR elsewhere`);
    if (parent === path.dirname(parent)) return;
  }
}

/** The working tree as git sees it: tracked and new files, without ignored ones (node_modules, data). */
function copyCheckout(to) {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  if (listed.status !== 0) fail('git ls-files failed', listed.stderr);
  for (const file of listed.stdout.split('\0')) {
    // A tracked file deleted in the working tree is listed too.
    if (file && existsSync(path.join(root, file))) cpSync(path.join(root, file), path.join(to, file));
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Two seconds of H.264/AAC in MP4, made with the ffmpeg on PATH, else the one the service ships. */
function makeVideo(dir, app) {
  const bundled = spawnSync('node', ['-p', "require('@ffmpeg-installer/ffmpeg').path"], { cwd: app, encoding: 'utf8' }).stdout.trim();
  const ffmpeg = spawnSync('ffmpeg', ['-version']).status === 0 ? 'ffmpeg' : bundled;
  const file = path.join(dir, 'smoke.mp4');
  const args =
    '-v error -y -f lavfi -i testsrc=duration=2:size=320x240:rate=25 -f lavfi -i sine=duration=2 -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest -movflags +faststart';
  const run = spawnSync(ffmpeg, [...args.split(' '), file], { encoding: 'utf8' });
  if (run.status !== 0) fail(`${ffmpeg} could not make the test video`, run.stderr);
  return readFileSync(file);
}

/** Serves `bytes` as video/mp4 on 127.0.0.1 at /smoke.mp4. */
function serveVideo(bytes) {
  return new Promise((resolve) => {
    const server = createHttpServer((request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length });
      response.end(request.method === 'HEAD' ? undefined : bytes);
    });
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/** Processes whose command line names `dir`: the service and its PostgreSQL. */
function processesUnder(dir) {
  const found = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (cmdline.includes(dir)) found.push(`${pid} ${cmdline}`);
    } catch {
      // It ended while being looked at.
    }
  }
  return found;
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'vds-omit-dev-'));
// As root, the embedded cluster runs as `postgres`, which must be able to reach DATA_DIR.
chmodSync(scratch, 0o755);
const app = path.join(scratch, 'app');
let service;
let source;
try {
  checkNoModulesAbove(app);
  copyCheckout(app);

  let start = Date.now();
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app, encoding: 'utf8' });
  if (install.status !== 0) fail('npm ci failed', install.stdout + install.stderr);
  const prune = spawnSync('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund'], { cwd: app, encoding: 'utf8' });
  if (prune.status !== 0) fail('npm prune --omit=dev failed', prune.stdout + prune.stderr);
  console.log(`npm ci, then npm prune --omit=dev: ${since(start)}`);

  const port = await freePort();
  start = Date.now();
  // Only what the service needs, so that no DATABASE_URL or other setting of this machine leaks in.
  service = spawn('npm', ['start'], {
    cwd: app,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: path.join(scratch, 'data'),
      // The smoke's source is on loopback.
      ALLOW_PRIVATE_ADDRESSES: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own, so that a service that will not stop can be killed with all it started.
    detached: true,
  });
  let output = '';
  service.stdout.on('data', (chunk) => (output += chunk));
  service.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => service.once('exit', (code, signal) => resolve(code ?? signal)));

  const probe = `http://127.0.0.1:${port}/downloads/${randomUUID()}`;
  for (;;) {
    if (service.exitCode !== null || service.signalCode !== null) fail(`the service exited (${await exited}) before answering`, output);
    const answer = await fetch(probe).then(
      async (response) => ({ status: response.status, body: await response.text() }),
      () => undefined,
    );
    if (answer?.status === 404) break;
    if (answer) fail(`GET ${probe} answered ${answer.status}, not 404: ${answer.body}`, output);
    if (Date.now() - start > START_TIMEOUT_MS) fail(`the service did not answer within ${START_TIMEOUT_MS / 1000} s`, output);
    await sleep(200);
  }
  console.log(`service answered 404 after ${since(start)}`);

  start = Date.now();
  const video = makeVideo(scratch, app);
  source = await serveVideo(video);
  const created = await fetch(`http://127.0.0.1:${port}/downloads`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${source.address().port}/smoke.mp4` }),
  });
  if (created.status !== 202) fail(`POST /downloads answered ${created.status}: ${await created.text()}`, output);
  let download = await created.json();
  while (!['completed', 'failed', 'cancelled', 'expired'].includes(download.status)) {
    if (Date.now() - start > DOWNLOAD_TIMEOUT_MS) fail(`the download was still ${download.status} after ${DOWNLOAD_TIMEOUT_MS / 1000} s`, output);
    await sleep(200);
    download = await (await fetch(`http://127.0.0.1:${port}/downloads/${download.id}`)).json();
  }
  if (download.status !== 'completed') fail(`the download ended ${download.status}: ${JSON.stringify(download.error)}`, output);
  const file = Buffer.from(await (await fetch(download.download_url)).arrayBuffer());
  const sha256 = createHash('sha256').update(video).digest('hex');
  if (!file.equals(video)) fail(`the file fetched back (${file.length} bytes) is not the ${video.length} bytes served`, output);
  if (download.file.sha256 !== sha256) fail(`file.sha256 is ${download.file.sha256}, not ${sha256}`, output);
  console.log(`one download end to end (${video.length} bytes, sha256 checked) in ${since(start)}`);

  start = Date.now();
  process.kill(service.pid, 'SIGTERM');
  const status = await Promise.race([exited, sleep(STOP_TIMEOUT_MS, 'timeout', { ref: false })]);
  if (status === 'timeout') fail(`the service did not stop within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM`, output);
  if (status !== 0) fail(`the service exited with ${status} on SIGTERM`, output);
  const left = processesUnder(scratch);
  if (left.length) fail(`processes left running after the service stopped:\n${left.join('\n')}`, output);
  console.log(`stopped on SIGTERM in ${since(start)}, embedded PostgreSQL with it`);
} catch (error) {
  if (!(error instanceof Failure)) throw error;
  console.error(error.message);
  process.exitCode = 1;
} finally {
  source?.close();
  if (service) {
    // Whatever of the group is still running after a failure (npm may have gone and left the service).
    try {
      process.kill(-service.pid, 'SIGKILL');
    } catch {
      // The group is gone: nothing was left.
    }
    service.stdout.destroy();
    service.stderr.destroy();
  }
  for (let wait = 0; wait < 50 && processesUnder(scratch).length; wait++) await sleep(100);
  rmSync(scratch, { recursive: true, force: true });
}

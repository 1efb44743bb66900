import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { makeDataDir, type Download } from './support/api.ts';
import { startFixtureServer } from './support/fixture-server.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { killServiceProcesses, spawnServiceProcess, type ServiceProcess } from './support/service-process.ts';
import { waitFor } from './support/waiting.ts';

// The service without DATABASE_URL, in a process of its own, killed the way nothing can clean up
// after (SIGKILL): its embedded PostgreSQL outlives it, and the next start on the same DATA_DIR
// has to deal with it.

// Each test starts the service twice, each time on a cluster of its own.
const TWO_STARTS_MS = 150_000;

const dataDirs: string[] = [];

async function freshDataDir(): Promise<string> {
  const dir = await makeDataDir();
  dataDirs.push(dir);
  return dir;
}

const pidFileOf = (dataDir: string) => path.join(dataDir, 'postgres', 'postmaster.pid');

async function postmasterOf(dataDir: string): Promise<number> {
  return Number((await readFile(pidFileOf(dataDir), 'utf8')).split('\n')[0]);
}

/** The fields of /proc/<pid>/stat after the command name: state first, the start time 20th. */
async function statOf(pid: number): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : [];
}

/** When the process started, in clock ticks since boot: with a PID, it names one process, even after the PID is reused. */
const startTimeOf = async (pid: number): Promise<string | undefined> => (await statOf(pid))[19];

/**
 * Alive and not a zombie waiting to be collected; with `startTime`, also the same process as
 * before: on a busy machine (pid_max is 32768 here) a PID that ended may soon name another one.
 */
async function isRunning(pid: number, startTime?: string): Promise<boolean> {
  const [state] = await statOf(pid);
  if (state === undefined || state === 'Z' || state === 'X') return false;
  return startTime === undefined || (await startTimeOf(pid)) === startTime;
}

/** A process that has ended meanwhile needs no signal. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already.
  }
}

async function startOn(dataDir: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnServiceProcess({ DATA_DIR: dataDir, ...env }, 60_000);
}

afterAll(async () => {
  await killServiceProcesses();
  // Every PostgreSQL a killed service left behind: an immediate shutdown (SIGQUIT), then SIGKILL.
  for (const dir of dataDirs) {
    const pid = await postmasterOf(dir).catch(() => 0);
    const args = pid > 0 ? await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '') : '';
    if (!args.split('\0').includes(path.join(dir, 'postgres'))) continue;
    signal(pid, 'SIGQUIT');
    for (let i = 0; i < 50 && (await isRunning(pid)); i++) await sleep(100);
    if (await isRunning(pid)) signal(pid, 'SIGKILL');
  }
  await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

test(
  'when the service was killed with SIGKILL, then its PostgreSQL outlives it, and the next start on that DATA_DIR stops it and comes up',
  async () => {
    const dataDir = await freshDataDir();
    const first = await startOn(dataDir);
    const leftover = await postmasterOf(dataDir);
    const leftoverStart = await startTimeOf(leftover);
    await first.kill('SIGKILL');
    expect(await isRunning(leftover, leftoverStart)).toBe(true);

    const second = await startOn(dataDir);
    expect(await isRunning(leftover, leftoverStart)).toBe(false);
    expect(second.output()).toContain(`stopping PostgreSQL PID ${leftover}`);
    const current = await postmasterOf(dataDir);
    expect(current).not.toBe(leftover);
    expect(await isRunning(current)).toBe(true);
    expect((await second.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')).status).toBe(404);
  },
  TWO_STARTS_MS,
);

test(
  'when postmaster.pid was left behind by a PostgreSQL that is gone, then the service starts',
  async () => {
    const dataDir = await freshDataDir();
    const first = await startOn(dataDir);
    const pidFile = await readFile(pidFileOf(dataDir), 'utf8');
    const gone = await postmasterOf(dataDir);
    // A clean stop removes the file; putting it back makes it what a crash of the whole machine leaves.
    await first.kill('SIGTERM');
    expect(await isRunning(gone)).toBe(false);
    await writeFile(pidFileOf(dataDir), pidFile);

    const second = await startOn(dataDir);
    expect(second.output()).not.toContain('stopping PostgreSQL');
    expect(await postmasterOf(dataDir)).not.toBe(gone);
    expect((await second.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')).status).toBe(404);
  },
  TWO_STARTS_MS,
);

/**
 * A service stopped cleanly, with its postmaster.pid put back naming `pid` instead: what a crash
 * leaves once the PID has been given to another process.
 */
async function stalePidFileNaming(pid: number): Promise<string> {
  const dataDir = await freshDataDir();
  const first = await startOn(dataDir);
  const [, ...rest] = (await readFile(pidFileOf(dataDir), 'utf8')).split('\n');
  await first.kill('SIGTERM');
  await writeFile(pidFileOf(dataDir), [String(pid), ...rest].join('\n'));
  return dataDir;
}

/** The ids of the user the embedded PostgreSQL runs as: `postgres` when the service runs as root, else the service's own. */
async function postmasterUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) => Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim());
  return { uid: await id('-u'), gid: await id('-g') };
}

/**
 * Runs `script` in sh, which prints a PID on its first line; the process is killed after the test.
 * It runs as PostgreSQL's user: PostgreSQL takes a pid file over when signalling its PID is refused
 * (another user's process), so only a process of its own user makes it refuse to start.
 */
async function shellPrintingPid(script: string): Promise<{ pid: number; shell: ChildProcess }> {
  const shell = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'], ...(await postmasterUser()) });
  others.push(shell);
  const [line] = (await once(shell.stdout, 'data')) as [Buffer];
  return { pid: Number(line.toString().trim()), shell };
}

const others: ChildProcess[] = [];
afterAll(() => others.forEach((child) => child.kill('SIGKILL')));

test(
  'when postmaster.pid names a PID that another program now runs, then the service removes the stale file and starts',
  async () => {
    const { pid: other } = await shellPrintingPid('echo $$; exec sleep 300');
    const dataDir = await stalePidFileNaming(other);

    const second = await startOn(dataDir);
    expect(second.output()).toContain(`PID ${other} now names another process`);
    expect(await isRunning(other)).toBe(true);
    expect(await postmasterOf(dataDir)).not.toBe(other);
    expect((await second.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')).status).toBe(404);
  },
  TWO_STARTS_MS,
);

test(
  'when postmaster.pid names a zombie (a process ended that its parent has not collected), then the service starts',
  async () => {
    // sh starts a child that ends at once, then becomes sleep, which never collects it.
    const { pid: zombie } = await shellPrintingPid('sleep 0 & echo $!; exec sleep 300');
    await waitFor('the child to be a zombie', async () => (await statOf(zombie))[0] === 'Z', 10_000);
    const dataDir = await stalePidFileNaming(zombie);

    const second = await startOn(dataDir);
    expect(await postmasterOf(dataDir)).not.toBe(zombie);
    expect((await second.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')).status).toBe(404);
  },
  TWO_STARTS_MS,
);

test(
  'when a service still runs on the DATA_DIR, then a second start on it fails and leaves that database alone',
  async () => {
    const dataDir = await freshDataDir();
    const running = await startOn(dataDir);
    const postmaster = await postmasterOf(dataDir);

    await expect(startOn(dataDir)).rejects.toThrow(/belongs to service process \d+, which is still running/);
    expect(await isRunning(postmaster)).toBe(true);
    expect((await running.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')).status).toBe(404);
  },
  TWO_STARTS_MS,
);

test(
  'when Ctrl-C signals the whole process group, then the service checkpoints its running download, stops its PostgreSQL last and exits 0, and the next start resumes the download',
  async () => {
    const source = await startFixtureServer();
    try {
      const size = (await stat(mediaPath('big.mp4'))).size;
      const url = source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 8) });
      const dataDir = await freshDataDir();
      const env = { ALLOW_PRIVATE_ADDRESSES: 'true' };
      const first = await startOn(dataDir, env);
      const postmaster = await postmasterOf(dataDir);
      const { id } = (await first.http.createDownload({ url })).body as Download;
      await waitFor('a quarter of the file', async () => ((await first.http.getDownload(id)).body as Download).progress.downloaded_bytes > size / 4, 30_000);

      const exitCode = await first.signalGroup('SIGINT');
      expect({ exitCode, output: first.output() }).toMatchObject({ exitCode: 0, output: expect.stringContaining('SIGINT: shutting down') });
      expect(await isRunning(postmaster)).toBe(false);

      const second = await startOn(dataDir, env);
      // Stopped by the service, not left running for the next start to stop.
      expect(second.output()).not.toContain('stopping PostgreSQL');
      const done = await second.waitForStatus(id, ['completed'], 60_000);
      expect(done.file?.sha256).toBe(await sha256File(mediaPath('big.mp4')));
      const requests = source.requestsFor('/slow.mp4');
      expect(requests).toHaveLength(2);
      expect(requests[1]!.range).toMatch(/^bytes=[1-9]\d*-$/);
    } finally {
      await source.close();
    }
  },
  TWO_STARTS_MS,
);

test(
  'when the terminal closes (SIGHUP to the group), then the service shuts down as on SIGTERM and stops its PostgreSQL',
  async () => {
    const dataDir = await freshDataDir();
    const running = await startOn(dataDir);
    const postmaster = await postmasterOf(dataDir);
    const exitCode = await running.signalGroup('SIGHUP');
    expect({ exitCode, output: running.output() }).toMatchObject({ exitCode: 0, output: expect.stringContaining('SIGHUP: shutting down') });
    expect(await isRunning(postmaster)).toBe(false);
  },
  TWO_STARTS_MS,
);

test(
  'when the cluster exists but its database does not (a first start stopped before making it), then the next start makes it',
  async () => {
    const dataDir = await freshDataDir();
    const first = await startEmbeddedPostgres(dataDir);
    const admin = new pg.Client({ connectionString: first.url.replace(/\/downloads$/, '/postgres') });
    await admin.connect();
    await admin.query('DROP DATABASE downloads');
    await admin.end();
    await first.stop();

    const second = await startEmbeddedPostgres(dataDir);
    try {
      const client = new pg.Client({ connectionString: second.url });
      await client.connect();
      expect((await client.query<{ name: string }>('SELECT current_database() AS name')).rows).toEqual([{ name: 'downloads' }]);
      await client.end();
    } finally {
      await second.stop();
    }
  },
  TWO_STARTS_MS,
);

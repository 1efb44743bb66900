import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// A service killed outright (kill -9, V8 aborting on out-of-memory) runs no code on its way out, so
// the embedded PostgreSQL it started keeps running on DATA_DIR/postgres, and the next start would
// find the cluster taken. That PostgreSQL is stopped at start: a fast shutdown (SIGINT), SIGKILL
// when it has not ended within SHUTDOWN_WAIT_MS. It is told apart through /proc (so on Linux only;
// elsewhere nothing is found and PostgreSQL's own refusal to share its directory stands):
// - the PID of the cluster's postmaster.pid must run the postgres binary with `-D <this directory>`;
//   a pid file whose PID runs something else, or nothing, is stale and removed: PostgreSQL's own
//   check takes the file over only when no process has its PID, and refuses to start ("lock file
//   already exists") when the PID has been reused or names a zombie. Its other check, that no
//   process is still attached to the cluster's shared memory, stands;
// - its parent must not be the service process that started it (the owner file names it), which
//   would mean that service is still running: the database is in use, and this start fails instead.

const SHUTDOWN_WAIT_MS = 30_000;
const KILL_WAIT_MS = 5_000;
const POLL_MS = 100;

/** Records that this process runs the cluster, for a later start to know whether it still does. */
export async function recordOwner(ownerFile: string): Promise<void> {
  await writeFile(ownerFile, `${process.pid}\n`);
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

const positiveInteger = (text: string | null | undefined): number | null => (/^\d+$/.test(text?.trim() ?? '') ? Number(text) : null);

/** Whether `pid` is the postmaster of `databaseDir`: the postgres binary started with `-D databaseDir`. */
async function runsCluster(pid: number, databaseDir: string): Promise<boolean> {
  // A process that is gone has no entry; a zombie has an empty command line.
  const args = (await readOrNull(`/proc/${pid}/cmdline`))?.split('\0') ?? [];
  const dashD = args.indexOf('-D');
  const dataDirArg = dashD > 0 ? args[dashD + 1] : undefined;
  return path.basename(args[0] ?? '') === 'postgres' && dataDirArg !== undefined && path.resolve(dataDirArg) === path.resolve(databaseDir);
}

/** Sends `signal` to `pid`; one that has ended meanwhile needs none. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces): state, ppid, ... */
async function statusOf(pid: number): Promise<string[] | null> {
  const stat = await readOrNull(`/proc/${pid}/stat`);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

async function isRunning(pid: number): Promise<boolean> {
  const state = (await statusOf(pid))?.[0];
  // A zombie has ended; only its parent has yet to collect it.
  return state !== undefined && state !== 'Z' && state !== 'X';
}

async function endsWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (await isRunning(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/** Stops the PostgreSQL that an earlier run of the service left running on `databaseDir`, if any. */
export async function stopLeftoverPostmaster(databaseDir: string, ownerFile: string, warn: (message: string) => void): Promise<void> {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  const pid = positiveInteger((await readOrNull(pidFile))?.split('\n')[0]);
  if (pid === null) return;
  if (!(await runsCluster(pid, databaseDir))) {
    if (await isRunning(pid)) warn(`removing ${pidFile}: its PID ${pid} now names another process, not a PostgreSQL of this directory`);
    await rm(pidFile, { force: true });
    return;
  }
  const owner = positiveInteger(await readOrNull(ownerFile));
  const parent = positiveInteger((await statusOf(pid))?.[1]);
  if (owner !== null && parent === owner) {
    throw new Error(
      `The embedded PostgreSQL in ${databaseDir} (PID ${pid}) belongs to service process ${owner}, which is still running; stop it, or give this one another DATA_DIR.`,
    );
  }
  warn(`stopping PostgreSQL PID ${pid}, which a run of the service that ended without stopping it (kill -9 or a crash) left running in ${databaseDir}`);
  signal(pid, 'SIGINT');
  if (await endsWithin(pid, SHUTDOWN_WAIT_MS)) return;
  warn(`PostgreSQL PID ${pid} did not finish a fast shutdown within ${SHUTDOWN_WAIT_MS / 1000} s; killing it`);
  signal(pid, 'SIGKILL');
  if (!(await endsWithin(pid, KILL_WAIT_MS)))
    throw new Error(`PostgreSQL PID ${pid} in ${databaseDir} does not end, even killed; stop it, then start the service again.`);
}

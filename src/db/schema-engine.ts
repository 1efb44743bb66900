import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import { projectRoot } from '../config/paths.ts';
import { schemaEngineAdapter } from './schema-engine-adapter.ts';

// Prisma's own schema engine, compiled to WebAssembly, so that migrations run offline: the Prisma
// CLI would download a native engine first. The package's entry imports the .wasm as an ES module,
// which Node refuses, so the module is instantiated here by hand.

export const schemaPath = path.join(projectRoot, 'prisma/schema.prisma');
export const migrationsDir = path.join(projectRoot, 'prisma/migrations');

const require = createRequire(import.meta.url);
/** The engine itself, beside the JS glue (`schema_engine_bg.js`) it was built with. */
export const schemaEngineWasmPath = path.join(path.dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')), 'schema_engine_bg.wasm');

let loaded: Promise<typeof bg> | undefined;

// Node has WebAssembly; the Node typings of this TypeScript version do not declare it.
const wasmRuntime = (
  globalThis as unknown as {
    WebAssembly: { instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: unknown } }> };
  }
).WebAssembly;

/**
 * The engine's glue module, wired to its instantiated WebAssembly. test/migrations.test.ts checks
 * what this relies on, which a Prisma upgrade may change.
 */
export function loadSchemaEngine(): Promise<typeof bg> {
  loaded ??= (async () => {
    const { instance } = await wasmRuntime.instantiate(await readFile(schemaEngineWasmPath), { './schema_engine_bg.js': withUnrefTimers(bg) });
    const exports = instance.exports as { __wbindgen_start(): void };
    bg.__wbg_set_wasm(exports);
    exports.__wbindgen_start();
    return bg;
  })();
  return loaded;
}

/**
 * The engine arms timers (10 s) that outlive `free()`; unreferenced, they no longer keep a process
 * alive that has nothing else to do, such as `npm run db:migrate` or a test run.
 */
function withUnrefTimers(imports: typeof bg): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(imports).map(([name, value]) =>
      name.startsWith('__wbg_setTimeout') && typeof value === 'function'
        ? [name, (...args: unknown[]) => (value as (...a: unknown[]) => NodeJS.Timeout)(...args).unref()]
        : [name, value],
    ),
  );
}

/** Runs `use` with a schema engine connected to `databaseUrl`, and frees it afterwards. */
export async function withSchemaEngine<T>(databaseUrl: string, use: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const wasm = await loadSchemaEngine();
  const schema = await readFile(schemaPath, 'utf8');
  const { adapter, end } = schemaEngineAdapter(databaseUrl);
  const engine = await wasm.SchemaEngine.new({ datamodels: [[schemaPath, schema]] }, () => {}, adapter);
  try {
    return await use(engine);
  } finally {
    engine.free();
    await end();
  }
}

/** The migrations folder in the shape the engine reads, like `prisma migrate deploy` builds it. */
export async function readMigrations(): Promise<MigrationList> {
  const names = (await readdir(migrationsDir, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const lockPath = path.join(migrationsDir, 'migration_lock.toml');
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: await readFile(lockPath, 'utf8').catch(() => null) },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      names.map(async (name) => ({
        path: name,
        migrationFile: {
          path: 'migration.sql',
          content: { tag: 'ok' as const, value: await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8') },
        },
      })),
    ),
  };
}

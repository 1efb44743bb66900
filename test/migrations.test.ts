import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';
import * as glue from '@prisma/schema-engine-wasm/schema_engine_bg';
import { Prisma } from '../generated/prisma/client.ts';
import { projectRoot } from '../src/config/paths.ts';
import { applyMigrations, schemaDiff } from '../src/db/migrate.ts';
import { loadSchemaEngine, migrationsDir, readMigrations, schemaEngineWasmPath } from '../src/db/schema-engine.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { ADMIN_DATABASE_URL_ENV, publishedEnv } from './support/published-env.ts';

// src/db/schema-engine.ts runs Prisma's WebAssembly schema engine by hand, against internals that
// Prisma pins to one engines build: the engine's glue, its imports and exports, the adapter it is
// given. A Prisma upgrade that moves any of them must fail here, by name, rather than at a start.

type Manifest = { version: string; devDependencies?: Record<string, string> };

async function manifest(name: string): Promise<Manifest> {
  return JSON.parse(await readFile(path.join(projectRoot, 'node_modules', name, 'package.json'), 'utf8')) as Manifest;
}

/** The build hash that ends an engines version such as `7.10.0-4.0edf323efd1d98336f3f0a68684b56f689b900d3`. */
const buildHash = (version: string | undefined): string | undefined => version?.split('.').at(-1);

// Node has WebAssembly; the Node typings of this TypeScript version do not declare it.
type Descriptor = { module: string; name: string; kind: string };
const wasm = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<object>;
      Module: { imports(module: object): Descriptor[]; exports(module: object): Descriptor[] };
    };
  }
).WebAssembly;

describe('the Prisma release', () => {
  it('is one version of prisma, @prisma/client and the driver adapter packages', async () => {
    const names = ['prisma', '@prisma/client', '@prisma/adapter-pg', '@prisma/driver-adapter-utils'];
    const versions = Object.fromEntries(await Promise.all(names.map(async (name) => [name, (await manifest(name)).version])));
    expect(versions).toEqual(Object.fromEntries(names.map((name) => [name, versions.prisma])));
  });

  it('has the schema engine of its own engines build', async () => {
    const fromCli = createRequire(path.join(projectRoot, 'node_modules/prisma/package.json'));
    const { enginesVersion } = fromCli('@prisma/engines') as { enginesVersion: string };
    const engines = {
      'prisma (@prisma/engines)': enginesVersion,
      '@prisma/client (its @prisma/engines-version)': buildHash((await manifest('@prisma/client')).devDependencies?.['@prisma/engines-version']),
      '@prisma/schema-engine-wasm (its version)': buildHash((await manifest('@prisma/schema-engine-wasm')).version),
      '@prisma/schema-engine-wasm (what the loaded engine says)': (await loadSchemaEngine()).version(),
      'generated/prisma (run npm run generate)': Prisma.prismaVersion.engine,
    };
    expect(engines).toEqual(Object.fromEntries(Object.keys(engines).map((key) => [key, enginesVersion])));
    expect(Prisma.prismaVersion.client).toBe((await manifest('@prisma/client')).version);
  });

  it('has a WebAssembly engine with everything the loader and its glue use', async () => {
    const module = await wasm.compile(await readFile(schemaEngineWasmPath));
    const imports = wasm.Module.imports(module);
    const exported = new Set(wasm.Module.exports(module).map((entry) => entry.name));
    const glueSource = await readFile(path.join(path.dirname(schemaEngineWasmPath), 'schema_engine_bg.js'), 'utf8');
    const usedByGlue = [...new Set([...glueSource.matchAll(/\bwasm\.(\w+)/g)].map((match) => match[1]!))];
    const glueExports = glue as unknown as Record<string, unknown>;

    // The loader hands the glue module over as the one import module, under this name.
    expect([...new Set(imports.map((entry) => entry.module))]).toEqual(['./schema_engine_bg.js']);
    expect(imports.filter((entry) => typeof glueExports[entry.name] !== 'function').map((entry) => entry.name)).toEqual([]);
    // The timers the loader unreferences, so that a finished migration does not hold the process.
    expect(imports.some((entry) => entry.name.startsWith('__wbg_setTimeout'))).toBe(true);
    expect(['__wbindgen_start', ...usedByGlue].filter((name) => !exported.has(name))).toEqual([]);
    expect(typeof glue.__wbg_set_wasm).toBe('function');
    expect(typeof glue.SchemaEngine.new).toBe('function');
    for (const method of ['applyMigrations', 'diff', 'free'] as const) expect(typeof glue.SchemaEngine.prototype[method]).toBe('function');
  });
});

describe('the migrations', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await database?.drop();
  });

  it('applied to an empty database, give prisma/schema.prisma: the diff between them is empty', async () => {
    expect(await schemaDiff(publishedEnv(ADMIN_DATABASE_URL_ENV))).toBe('');
  });

  it('are recorded as prisma migrate deploy records them, and applied once', async () => {
    const { migrationDirectories } = await readMigrations();
    const names = migrationDirectories.map((directory) => directory.path);
    expect(names.length).toBeGreaterThan(0);
    expect(await applyMigrations(database.url)).toEqual(names);
    expect(await applyMigrations(database.url)).toEqual([]);

    // The checksum is the SHA-256 of migration.sql: what a native engine checks the history against.
    const expected = await Promise.all(
      names.map(async (name) => ({
        migration_name: name,
        checksum: createHash('sha256')
          .update(await readFile(path.join(migrationsDir, name, 'migration.sql')))
          .digest('hex'),
        finished: true,
        rolled_back: false,
        applied_steps_count: 1,
      })),
    );
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back, applied_steps_count
         FROM _prisma_migrations ORDER BY migration_name`,
      );
      expect(rows).toEqual(expected);
    } finally {
      await client.end();
    }
  });
});

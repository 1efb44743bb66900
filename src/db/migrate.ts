import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readMigrations, schemaPath, withSchemaEngine } from './schema-engine.ts';
import { withScratchDatabase } from './scratch-database.ts';

const noExternal = { externalTables: [], externalEnums: [] };

/** Applies pending migrations, recording them in `_prisma_migrations`; returns their names. */
export async function applyMigrations(databaseUrl: string): Promise<string[]> {
  const migrationsList = await readMigrations();
  return withSchemaEngine(databaseUrl, async (engine) => {
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList, filters: noExternal });
    return appliedMigrationNames;
  });
}

/**
 * SQL that would bring a database migrated with the committed migrations up to
 * prisma/schema.prisma: empty when they agree, else the body of the next migration. It migrates a
 * scratch database on the server of `serverUrl` and compares that with the schema.
 */
export async function schemaDiff(serverUrl: string): Promise<string> {
  const content = await readFile(schemaPath, 'utf8');
  return withScratchDatabase(serverUrl, async (scratchUrl) => {
    await applyMigrations(scratchUrl);
    return withSchemaEngine(scratchUrl, async (engine) => {
      const result = await engine.diff({
        from: { tag: 'schemaDatasource', files: [{ path: schemaPath, content }], configDir: path.dirname(schemaPath) },
        to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content }] },
        script: true,
        exitCode: null,
        filters: noExternal,
      });
      const sql = result.stdout ?? '';
      return sql.includes('This is an empty migration') ? '' : sql;
    });
  });
}

import { applyMigrations, schemaDiff } from './migrate.ts';

// `npm run db:migrate` applies the migrations to DATABASE_URL, like `prisma migrate deploy`.
// `npm run db:diff` prints the SQL that would bring the migrations up to prisma/schema.prisma:
// empty when they agree (CI checks that), otherwise the body of the next migration.
const [command] = process.argv.slice(2);
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('DATABASE_URL must be set');
  process.exit(2);
}
if (command === 'migrate') {
  try {
    const applied = await applyMigrations(databaseUrl);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  } catch (error) {
    // One line that the service (migrate-apart.ts) turns back into an error with its code.
    const { code, message } = error as { code?: unknown; message?: unknown };
    console.error(`migration failed${typeof code === 'string' ? ` (${code})` : ''}: ${String(message ?? error).replace(/\s*\n\s*/g, ' ')}`);
    process.exit(1);
  }
} else if (command === 'diff') {
  process.stdout.write(await schemaDiff(databaseUrl));
} else {
  console.error('usage: cli.ts migrate|diff');
  process.exit(2);
}

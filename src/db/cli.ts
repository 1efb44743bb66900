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
  const applied = await applyMigrations(databaseUrl);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} else if (command === 'diff') {
  process.stdout.write(await schemaDiff(databaseUrl));
} else {
  console.error('usage: cli.ts migrate|diff');
  process.exit(2);
}

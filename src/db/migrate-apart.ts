import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../config/paths.ts';

// The service migrates its database in a process of its own (`cli migrate`): Prisma's schema
// engine is WebAssembly, and its memory (about 45 MB) stays with the process that loaded it, which
// a service would carry for its whole life after using it once at start.

const compiled = import.meta.url.endsWith('.js');
const cli = fileURLToPath(new URL(`./cli.${compiled ? 'js' : 'ts'}`, import.meta.url));
/** What cli.ts prints when migrating fails: the reason's code (Prisma's, PostgreSQL's, node's) and message. */
const FAILURE = /^migration failed(?: \(([\w.]+)\))?: (.*)$/m;

export function applyMigrationsApart(databaseUrl: string): Promise<void> {
  const args = [...(compiled ? [] : ['--import', 'tsx']), cli, 'migrate'];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: projectRoot, env: { ...process.env, DATABASE_URL: databaseUrl } }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      const [, code, message] = FAILURE.exec(stderr) ?? [];
      reject(Object.assign(new Error(message ?? `migrating the database failed: ${stderr.trim() || error.message}`), { code }));
    });
  });
}

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runningAdminDatabase, startAdminDatabase } from './admin-database.ts';
import { prepareMediaCache } from './media-cache.ts';
import { ADMIN_DATABASE_URL_ENV, MEDIA_DIR_ENV } from './published-env.ts';

// What a whole jest run needs once: a database server, the generated media, and dist/ built.

export async function setUpTestRun(): Promise<void> {
  const [database, media, build] = await Promise.allSettled([startAdminDatabase(), prepareMediaCache(), buildDist()]);
  for (const prepared of [media, build]) {
    if (prepared.status === 'fulfilled') continue;
    // Jest skips globalTeardown when setup throws, so nothing else would stop the database.
    if (database.status === 'fulfilled') await database.value.stop();
    throw prepared.reason;
  }
  if (database.status === 'rejected') throw database.reason;
  runningAdminDatabase.set(database.value);
  process.env[ADMIN_DATABASE_URL_ENV] = database.value.url;
  process.env[MEDIA_DIR_ENV] = (media as PromiseFulfilledResult<string>).value;
}

/**
 * Compiles dist/ (the SDK and the CLI) once for the run, from the sources as they are now, so that
 * the tests that run them as another project would never see a stale or half-written build.
 */
async function buildDist(): Promise<void> {
  await promisify(execFile)('npm', ['run', '-s', 'build'], { cwd: fileURLToPath(new URL('../..', import.meta.url)) });
}

export async function tearDownTestRun(): Promise<void> {
  await runningAdminDatabase.take()?.stop();
}

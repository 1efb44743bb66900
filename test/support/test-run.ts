import { runningAdminDatabase, startAdminDatabase } from './admin-database.ts';
import { prepareMediaCache } from './media-cache.ts';
import { ADMIN_DATABASE_URL_ENV, MEDIA_DIR_ENV } from './published-env.ts';

// What a whole jest run needs once: a database server and the generated media.

export async function setUpTestRun(): Promise<void> {
  const [database, media] = await Promise.allSettled([startAdminDatabase(), prepareMediaCache()]);
  if (media.status === 'rejected') {
    // Jest skips globalTeardown when setup throws, so nothing else would stop the database.
    if (database.status === 'fulfilled') await database.value.stop();
    throw media.reason;
  }
  if (database.status === 'rejected') throw database.reason;
  runningAdminDatabase.set(database.value);
  process.env[ADMIN_DATABASE_URL_ENV] = database.value.url;
  process.env[MEDIA_DIR_ENV] = media.value;
}

export async function tearDownTestRun(): Promise<void> {
  await runningAdminDatabase.take()?.stop();
}

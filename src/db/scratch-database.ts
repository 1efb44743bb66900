import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Runs `use` with the URL of a new, empty database on the same server as `serverUrl`, and drops
 * it afterwards. The schema engine's diff replays the migrations into the database it is connected
 * to (its "shadow" database), so it must never be given a real one.
 */
export async function withScratchDatabase<T>(serverUrl: string, use: (url: string) => Promise<T>): Promise<T> {
  const name = `scratch_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    try {
      return await use(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

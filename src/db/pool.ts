import pg from 'pg';

/**
 * The process's connections to PostgreSQL. Prisma's queries run on it, and so do the statements
 * written as SQL where Prisma's per-query cost is too high (the create batch).
 */
export function createPool(databaseUrl: string, applicationName?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, application_name: applicationName });
  // An idle connection that breaks (the database restarted) is dropped by the pool, and the next
  // query opens another; without a listener its error would end the process.
  pool.on('error', () => {});
  // So would one that breaks while it is lent out between two queries (the pool listens to idle
  // connections only), or while it is being ended: the query it had, if any, fails with it all the same.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * Runs `work` in a transaction on one connection of `pool`. A connection whose ROLLBACK failed is
 * closed rather than handed to the next query in an unknown state.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}

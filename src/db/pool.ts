import pg from 'pg';
import { boundIfOwed, DatabaseTooSlow } from './deadline.ts';

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
  pool.on('connect', (client) => {
    client.on('error', () => {});
    boundQueries(client);
  });
  boundQueries(pool);
  const connect = pool.connect.bind(pool);
  pool.connect = ((callback?: Parameters<typeof connect>[0]) => (callback ? connect(callback) : lendIfOwed(connect()))) as typeof pool.connect;
  return pool;
}

/**
 * Bounds the queries asked of `target` as promises when made for a request (deadline.ts): the
 * pool's own (Prisma's, and pg-boss's), and a lent connection's (a transaction's). The pool's
 * internal calls pass callbacks, and are bounded by the call that made them.
 */
function boundQueries(target: pg.Pool | pg.Client): void {
  const query = target.query.bind(target) as (...args: unknown[]) => unknown;
  target.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? boundIfOwed(result) : result;
  }) as typeof target.query;
}

/** A connection lent for a request, or DatabaseTooSlow; one that comes too late goes back to the pool. */
async function lendIfOwed(lent: Promise<pg.PoolClient>): Promise<pg.PoolClient> {
  try {
    return await boundIfOwed(lent);
  } catch (error) {
    if (error instanceof DatabaseTooSlow)
      lent.then(
        (client) => client.release(),
        () => {},
      );
    throw error;
  }
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
    // A connection whose query is still waiting would take the ROLLBACK only after it: closed
    // instead, it takes the transaction with it at once.
    if (error instanceof DatabaseTooSlow) broken = error;
    else await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}

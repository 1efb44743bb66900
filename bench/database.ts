import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';

// Every service the benchmark starts gets a database of its own, created empty for the run: on
// the server BENCH_DATABASE_URL names, or else on an embedded PostgreSQL 18 in the run's
// directory (the one `npm start` would run).

export type DatabaseServer = {
  label: string;
  /** A new empty database; returns its URL. */
  create(): Promise<string>;
  stop(): Promise<void>;
};

export async function startDatabaseServer(runDir: string): Promise<DatabaseServer> {
  const external = process.env.BENCH_DATABASE_URL;
  const embedded = external ? undefined : await startEmbeddedPostgres(path.join(runDir, 'postgres'));
  const adminUrl = external ?? embedded!.url;
  const created: string[] = [];
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    label: external ? 'BENCH_DATABASE_URL' : 'embedded PostgreSQL 18',
    async create() {
      const name = `vds_bench_${randomBytes(6).toString('hex')}`;
      await admin(`CREATE DATABASE ${name}`);
      created.push(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    },
    async stop() {
      // FORCE: connections a stopped service left behind must not keep a database alive.
      for (const name of created) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await embedded?.stop();
    },
  };
}

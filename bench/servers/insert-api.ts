import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';

// The floor for POST /downloads: Express parsing a JSON body and one INSERT into the same
// database, with nothing else (no contract validation, no queue, no transaction).
// `tsx bench/servers/insert-api.ts DATABASE_URL`

const [databaseUrl] = process.argv.slice(2);
if (!databaseUrl) throw new Error('usage: insert-api.ts DATABASE_URL');
const pool = new pg.Pool({ connectionString: databaseUrl });
await pool.query('CREATE TABLE IF NOT EXISTS bench_scratch (id uuid PRIMARY KEY, url text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');

const app = express();
app.use(express.json());
app.post('/downloads', async (req, res) => {
  const url: unknown = (req.body as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string') {
    res.status(400).json({ error: 'url is required' });
    return;
  }
  const { rows } = await pool.query<{ id: string; created_at: Date }>('INSERT INTO bench_scratch (id, url) VALUES ($1, $2) RETURNING id, created_at', [
    randomUUID(),
    url,
  ]);
  res.status(202).json({ id: rows[0]!.id, status: 'queued', url, created_at: rows[0]!.created_at });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end();
});

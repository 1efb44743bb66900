import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { unusedPort } from './support/ports.ts';
import { killServiceProcesses, spawnServiceProcess } from './support/service-process.ts';

// A service that cannot start says why in words a person can act on, not with a stack trace.

const STACK_FRAME = /^\s+at .+[:(]/m;

afterAll(killServiceProcesses);

/** What a start that must fail printed, and the code it exited with. */
async function failedStart(env: Record<string, string>): Promise<{ code: string; output: string }> {
  const error = await spawnServiceProcess(env).then(
    () => new Error('the service started'),
    (reason: Error) => reason,
  );
  const [, code = '', output = ''] = /^the service exited \((\w+)\) before answering:\n([\s\S]*)$/.exec(error.message) ?? [];
  if (!code) throw error;
  return { code, output };
}

test('when the database cannot be reached, then the service exits non-zero with one message and no stack trace', async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  try {
    const { code, output } = await failedStart({ DATA_DIR: dataDir, DATABASE_URL: `postgresql://postgres@127.0.0.1:${await unusedPort()}/downloads` });
    expect(code).not.toBe('0');
    expect(output).toMatch(/did not start/);
    expect(output).not.toMatch(STACK_FRAME);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

const asRoot = process.getuid?.() === 0;
if (!asRoot)
  console.log('start-up-errors.test.ts: skipped the embedded PostgreSQL permission tests: they need root, where PostgreSQL runs as the `postgres` user');

describe('as root, with DATA_DIR inside a 0700 directory (what `mktemp -d` makes), which the `postgres` user cannot enter as it is', () => {
  let locked: string;

  beforeEach(async () => {
    locked = await mkdtemp(path.join(os.tmpdir(), 'vds-locked-'));
    expect((await stat(locked)).mode & 0o777).toBe(0o700);
  });

  afterEach(async () => {
    await rm(locked, { recursive: true, force: true });
  });

  (asRoot ? test : test.skip)(
    'when the embedded PostgreSQL is started, then that directory is opened to passing through (o+x) and the database starts',
    async () => {
      const database = await startEmbeddedPostgres(path.join(locked, 'data'));
      try {
        expect((await stat(locked)).mode & 0o777).toBe(0o701);
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        expect((await client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
        await client.end();
      } finally {
        await database.stop();
      }
    },
  );
});

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { makeDataDir } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { unusedPort } from './support/ports.ts';

// The compiled service (dist/, built by the test run's global setup, as `npm start` runs it): each
// role loads what it uses, so a worker process carries no Express, validator or page.

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
let database: TestDatabase;
let dataDir: string;
let scratch: string;

beforeAll(async () => {
  [database, dataDir, scratch] = await Promise.all([createTestDatabase(), makeDataDir(), mkdtemp(path.join(os.tmpdir(), 'vds-roles-'))]);
  // Starts the compiled service in the role given, reports which CommonJS packages it loaded, stops.
  await writeFile(
    path.join(scratch, 'loaded.mjs'),
    `import { createRequire } from 'node:module';
const { loadConfig } = await import(${JSON.stringify(`${root}dist/src/config/index.js`)});
const { startService } = await import(${JSON.stringify(`${root}dist/src/service.js`)});
const service = await startService(loadConfig());
const loaded = Object.keys(createRequire(import.meta.url).cache);
const has = (name) => loaded.some((file) => file.includes('/node_modules/' + name + '/'));
console.log(JSON.stringify({ express: has('express'), validator: has('express-openapi-validator')}));
await service.stop();
`,
  );
});

afterAll(async () => {
  await database?.drop();
  await Promise.all([dataDir, scratch].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function loadedIn(role: 'worker' | 'all'): Promise<Record<string, boolean>> {
  const env = {
    PATH: process.env.PATH ?? '',
    ROLE: role,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(await unusedPort()),
    LOG_LEVEL: 'silent',
  };
  const { stdout } = await run(process.execPath, [path.join(scratch, 'loaded.mjs')], { env });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, boolean>;
}

test('when the compiled service runs as a worker, then it loads no Express and no validator; with the API, it does', async () => {
  expect(await loadedIn('worker')).toEqual({ express: false, validator: false });
  expect(await loadedIn('all')).toEqual({ express: true, validator: true });
});

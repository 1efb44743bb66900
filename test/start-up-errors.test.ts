import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { createTestDatabase } from './support/database.ts';
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

test('when the database cannot be reached, then the service exits 1 with one line that names DATABASE_URL, and no stack trace', async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  try {
    const port = await unusedPort();
    const { code, output } = await failedStart({ DATA_DIR: dataDir, DATABASE_URL: `postgresql://postgres:secret@127.0.0.1:${port}/downloads` });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          // Here the embedded PostgreSQL is installed, so unsetting DATABASE_URL is offered (the image, without it, does not: npm run test:image).
          `^The service did not start: The database at DATABASE_URL \\(postgresql://127\\.0\\.0\\.1:${port}/downloads\\) cannot be used: .*; check DATABASE_URL, or unset it to run the embedded PostgreSQL\\.$`,
        ),
      ),
    ]);
    expect(output).not.toContain('secret');
    expect(output).not.toMatch(STACK_FRAME);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('when DATABASE_URL names a user the database does not know, then the service exits 1 with one line that names DATABASE_URL', async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  const database = await createTestDatabase();
  try {
    const url = new URL(database.url);
    url.username = 'no_such_user';
    url.password = 'wrong';
    const { code, output } = await failedStart({ DATA_DIR: dataDir, DATABASE_URL: url.toString() });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      expect.stringMatching(/^The service did not start: The database at DATABASE_URL \(postgresql:\/\/127\.0\.0\.1:.*; check DATABASE_URL/),
    ]);
    expect(output).not.toContain('wrong');
  } finally {
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('when the port is taken, then the service exits 1 with one line that names PORT', async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  const taken = http.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = taken.address() as AddressInfo;
    const { code, output } = await failedStart({ DATA_DIR: dataDir, PORT: String(port) });
    expect(code).toBe('1');
    expect(output.trim().split('\n').at(-1)).toBe(
      `The service did not start: Port ${port} on 127.0.0.1 is already in use; set PORT (or HOST) to one that is free.`,
    );
    expect(output).not.toMatch(STACK_FRAME);
    // The embedded PostgreSQL it had started stopped with it (it runs in a process group of its own).
    const postmaster = await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '');
    expect(postmaster).toBe('');
  } finally {
    taken.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('when DATA_DIR is a file, then the service exits 1 with one line that names DATA_DIR', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  const file = path.join(dir, 'not-a-directory');
  await writeFile(file, '');
  try {
    const { code, output } = await failedStart({ DATA_DIR: file });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      expect.stringMatching(/^The service did not start: DATA_DIR \(.*not-a-directory\) cannot be used: .*; set DATA_DIR to a directory/),
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('when FFMPEG_PATH names no executable, then the service exits 1 with one line that names FFMPEG_PATH', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  try {
    const missing = path.join(dir, 'no-ffmpeg-here');
    const { code, output } = await failedStart({ DATA_DIR: dir, FFMPEG_PATH: missing });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      `The service did not start: FFMPEG_PATH=${missing} is not an executable file; set FFMPEG_PATH to ffmpeg's path, or unset it to use the ffmpeg on PATH.`,
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('when YTDLP_PATH names no yt-dlp, then the service exits 1 with one line that names YTDLP_PATH', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  try {
    const missing = path.join(dir, 'no-yt-dlp-here');
    const { code, output } = await failedStart({ DATA_DIR: dir, YTDLP_PATH: missing });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      `The service did not start: YTDLP_PATH=${missing} does not run yt-dlp --version; point it at a yt-dlp, unset it (yt-dlp on PATH), or set YTDLP=off.`,
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('when STORAGE=s3 comes without S3_BUCKET, then the service exits 1 with one line that names S3_BUCKET, before it touches anything', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-start-'));
  try {
    const dataDir = path.join(dir, 'data');
    const { code, output } = await failedStart({ DATA_DIR: dataDir, STORAGE: 's3' });
    expect(code).toBe('1');
    expect(output.trim().split('\n')).toEqual([
      'The service did not start: invalid configuration: S3_BUCKET: must be set with STORAGE=s3 (docs/configuration.md).',
    ]);
    await expect(stat(dataDir)).rejects.toThrow(/ENOENT/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/** What only root can show: PostgreSQL run as the `postgres` user, under a folder root made. */
function expectRoot(): void {
  if (process.getuid?.() !== 0) throw new Error('This test needs root, where PostgreSQL runs as the `postgres` user: run the suite as root, as CI does.');
}

describe('as root, with DATA_DIR inside a 0700 directory (what `mktemp -d` makes), which the `postgres` user cannot enter as it is', () => {
  let locked: string;

  beforeEach(async () => {
    locked = await mkdtemp(path.join(os.tmpdir(), 'vds-locked-'));
    expect((await stat(locked)).mode & 0o777).toBe(0o700);
  });

  afterEach(async () => {
    await rm(locked, { recursive: true, force: true });
  });

  test('when the embedded PostgreSQL is started, then that directory is opened to passing through (o+x) and the database starts', async () => {
    expectRoot();
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
  });
});

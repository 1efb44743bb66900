import { createHmac, randomUUID } from 'node:crypto';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { KEY_HASH_SECRET_FILE } from '../src/config/key-hash-secret.ts';
import type { Config } from '../src/config/index.ts';
import { migrationsDir } from '../src/db/schema-engine.ts';
import { startService } from '../src/service.ts';
import { bodyJson, createHttp, makeDataDir, startTestService, testConfig, type Download, type TestHttp, type TestService } from './support/api.ts';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { openEventStream } from './support/event-stream.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';

// Tenancy (DESIGN.md 1g): with API_KEYS, a download belongs to the key that created it, and every
// operation on downloads is held to the caller's own; ADMIN_API_KEYS see everything; a retrieval
// link is a bearer capability whoever holds it. Nothing at rest holds a key.

const ALICE = 'alice-key-7f3a91c2e5d84b06';
const BOB = 'bob-key-2c9e4f81a7b35d60';
const ROOT = 'root-admin-key-5a1d8e37c04f92b6';
const CAROL = 'carol-key-91b7e2d04c6a3f58';
const as = (key: string) => ({ Authorization: `Bearer ${key}` });

type Page = { items: Download[]; next_cursor: string | null };

let source: FixtureServer;
let clipUrl: string;

beforeAll(async () => {
  source = await startFixtureServer();
  clipUrl = source.file('/clip.mp4', mediaPath('clip.mp4'));
});

afterAll(async () => {
  await source?.close();
});

async function create(http: TestHttp, key: string, body: object = { url: clipUrl }, headers: Record<string, string> = {}): Promise<Download> {
  const res = await http.createDownload(body, { ...as(key), ...headers });
  expect(res.status).toBe(202);
  return res.body as Download;
}

/** Every download the key can list, following cursors one download at a time. */
async function listAll(http: TestHttp, key: string, query = ''): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await http.request('GET', `/downloads?limit=1${query}${cursor ? `&cursor=${cursor}` : ''}`, '/downloads', { headers: as(key) });
    expect(res.status).toBe(200);
    const page = res.body as Page;
    ids.push(...page.items.map((item) => item.id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

/** A 404's problem with the id taken out: what another key's download and a missing one must share. */
function withoutId(res: { status: number; body: unknown }, id: string): unknown {
  return { status: res.status, body: JSON.parse(JSON.stringify(res.body).replaceAll(id, '<id>')) as unknown };
}

describe('two keys and an admin on one service', () => {
  let app: TestService;
  const mine: Record<string, string[]> = { [ALICE]: [], [BOB]: [], [ROOT]: [] };
  const createAs = async (key: string, body?: object, headers?: Record<string, string>) => {
    const download = await create(app.http, key, body, headers);
    if (!mine[key]!.includes(download.id)) mine[key]!.push(download.id);
    return download;
  };

  beforeAll(async () => {
    app = await startTestService({ apiKeys: [ALICE, BOB], adminApiKeys: [ROOT] });
  });

  afterAll(async () => {
    await app?.stop();
  });

  test("when bob asks for alice's download by id, then every operation answers as for an id that does not exist, and nothing changes", async () => {
    const slow = source.file('/slow-a.mp4', mediaPath('big.mp4'), { bytesPerSecond: 200_000 });
    const { id } = await createAs(ALICE, { url: slow });
    const missing = randomUUID();

    const read = await app.http.getDownload(id, as(BOB));
    expect(withoutId(read, id)).toEqual(withoutId(await app.http.getDownload(missing, as(BOB)), missing));
    expect(read.status).toBe(404);

    const cancel = await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}', { headers: as(BOB) });
    const cancelMissing = await app.http.request('DELETE', `/downloads/${missing}`, '/downloads/{download_uuid}', { headers: as(BOB) });
    expect(withoutId(cancel, id)).toEqual(withoutId(cancelMissing, missing));
    expect(cancel.status).toBe(404);

    const events = await openEventStream(app.service.url, id, as(BOB));
    await events.ended;
    expect(events.status).toBe(404);
    expect(events.events).toHaveLength(0);

    // Still alice's, still running: bob's DELETE did nothing.
    const own = await app.http.getDownload(id, as(ALICE));
    expect(own.status).toBe(200);
    expect(['queued', 'downloading']).toContain((own.body as Download).status);
    const ownEvents = await openEventStream(app.service.url, id, as(ALICE));
    const [first] = await ownEvents.waitForEvents(1);
    ownEvents.close();
    expect(first!.download.id).toBe(id);

    // The admin sees it and may cancel it.
    expect((await app.http.getDownload(id, as(ROOT))).status).toBe(200);
    const byAdmin = await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}', { headers: as(ROOT) });
    expect(byAdmin.status).toBe(200);
    expect((byAdmin.body as Download).status).toBe('cancelled');
    expect(((await app.http.getDownload(id, as(ALICE))).body as Download).status).toBe('cancelled');
  });

  test("when alice's download completes, then its link gives the file to whoever holds it, while bob still cannot read or remove the download", async () => {
    const { id } = await createAs(ALICE);
    const done = await waitCompleted(app.http, id, ALICE);
    expect((await app.http.getFile(done.download_url!)).status).toBe(200);
    expect((await app.http.getFile(done.download_url!, as(BOB))).status).toBe(200);
    expect((await app.http.getDownload(id, as(BOB))).status).toBe(404);
    expect((await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}', { headers: as(BOB) })).status).toBe(404);
    expect((await app.http.getFile(done.download_url!)).status).toBe(200);
  });

  test('when each key lists its downloads page by page, then it gets all of its own and none of the others, whatever cursor it sends; the admin lists all', async () => {
    // Interleaved, so that a cursor of alice's falls between bob's downloads.
    const bobs: string[] = [];
    for (let index = 0; index < 3; index++) {
      await createAs(ALICE, { url: clipUrl, filename: `alice-${index}` });
      if (index < 2) bobs.push((await createAs(BOB, { url: clipUrl, filename: `bob-${index}` })).id);
    }
    await createAs(ROOT);

    expect((await listAll(app.http, ALICE)).sort()).toEqual([...mine[ALICE]!].sort());
    expect((await listAll(app.http, BOB)).sort()).toEqual([...mine[BOB]!].sort());
    expect((await listAll(app.http, ROOT)).sort()).toEqual([...mine[ALICE]!, ...mine[BOB]!, ...mine[ROOT]!].sort());
    // A status filter is held to the caller's own too.
    const cancelled = await listAll(app.http, BOB, '&status=cancelled');
    expect(cancelled).toEqual([]);

    // Alice's cursor, sent by bob, only says where to resume in bob's own list: after alice-1 (newest
    // first), bob's downloads older than it, which is bob-0 alone, and none of alice's.
    const alicePage = (await app.http.request('GET', '/downloads?limit=2', '/downloads', { headers: as(ALICE) })).body as Page;
    const bobFrom = (await app.http.request('GET', `/downloads?limit=100&cursor=${alicePage.next_cursor}`, '/downloads', { headers: as(BOB) })).body as Page;
    expect(bobFrom.items.map((item) => item.id)).toEqual([bobs[0]]);
  });

  test('when alice and bob send the same Idempotency-Key and body at once, then each gets one download of their own, and each repeat returns their own', async () => {
    const key = `same-${randomUUID()}`;
    const body = { url: clipUrl, filename: 'idempotent' };
    const answers = await Promise.all(
      [ALICE, BOB, ALICE, BOB, ALICE, BOB, ALICE, BOB].map(async (who) => ({ who, download: await createAs(who, body, { 'Idempotency-Key': key }) })),
    );
    const idsOf = (who: string) => new Set(answers.filter((answer) => answer.who === who).map((answer) => answer.download.id));
    expect(idsOf(ALICE).size).toBe(1);
    expect(idsOf(BOB).size).toBe(1);
    const [alices] = idsOf(ALICE);
    const [bobs] = idsOf(BOB);
    expect(alices).not.toBe(bobs);
    expect((await app.http.getDownload(alices!, as(BOB))).status).toBe(404);

    // A different body under the key is a conflict only with the caller's own first use.
    const conflict = await app.http.createDownload({ url: clipUrl, filename: 'other' }, { ...as(ALICE), 'Idempotency-Key': key });
    expect(conflict.status).toBe(409);
    const fresh = `fresh-${randomUUID()}`;
    await createAs(ALICE, body, { 'Idempotency-Key': fresh });
    const bobsOwn = await createAs(BOB, { url: clipUrl, filename: 'other' }, { 'Idempotency-Key': fresh });
    expect(mine[ALICE]).not.toContain(bobsOwn.id);
  });

  test('when a download is made with an admin key, then the admin key works on its own and the other keys do not see its download', async () => {
    const { id } = await createAs(ROOT);
    expect((await app.http.getDownload(id, as(ROOT))).status).toBe(200);
    expect((await app.http.getDownload(id, as(ALICE))).status).toBe(404);
    expect(await listAll(app.http, ALICE)).not.toContain(id);
    expect((await app.http.request('GET', '/metrics', '/metrics', { headers: as(ROOT) })).status).toBe(200);
    expect((await app.http.request('GET', '/metrics', '/metrics', { headers: as(BOB) })).status).toBe(200);
  });

  test('when the database and the data directory are read whole, then no key is in them, and an owner is the HMAC of its key under the kept secret', async () => {
    // Every download ends first (the admin's too): a file read while a download runs may be gone by then.
    await Promise.all([ALICE, BOB, ROOT].flatMap((key) => mine[key]!.map((id) => waitEnded(app.http, id))));
    const secretFile = path.join(app.config.dataDir, KEY_HASH_SECRET_FILE);
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    const secret = (await readFile(secretFile, 'utf8')).trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const aliceOwner = createHmac('sha256', secret).update(ALICE).digest('hex');
    expect(new Set(await ownersOf(app.config.databaseUrl!, mine[ALICE]!))).toEqual(new Set([aliceOwner]));

    const dump = await dumpDatabase(app.config.databaseUrl!);
    // The dump holds the downloads (by their owners), and no key.
    expect(dump).toContain(aliceOwner);
    for (const key of [ALICE, BOB, ROOT]) expect(dump).not.toContain(key);

    for (const file of await filesUnder(app.config.dataDir)) {
      const bytes = await readFile(file);
      for (const key of [ALICE, BOB, ROOT]) expect(bytes.includes(key)).toBe(false);
    }
  });
});

describe('keys that change over time, and processes that share one database', () => {
  let database: TestDatabase;
  let dataDir: string;
  let running: { stop(): Promise<void> } | undefined;

  beforeAll(async () => {
    [database, dataDir] = await Promise.all([createTestDatabase(), makeDataDir()]);
  });

  afterAll(async () => {
    await running?.stop();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** An API process on the shared database; the one started before it is stopped first. */
  async function api(overrides: Partial<Config>, directory = dataDir): Promise<TestHttp> {
    await running?.stop();
    const service = await startService(testConfig(database.url, directory, { role: 'api', ...overrides }));
    running = service;
    return createHttp(service.url);
  }

  test('when keys are added, rotated and removed, then old downloads go to the admins, a removed key is locked out, and kept keys keep theirs', async () => {
    // Before keys, one shared space: its downloads belong to nobody.
    let http = await api({});
    const shared = (await http.createDownload({ url: 'https://media.example.com/shared.mp4' })).body as Download;

    http = await api({ apiKeys: [ALICE, BOB], adminApiKeys: [ROOT] });
    expect((await http.getDownload(shared.id, as(ALICE))).status).toBe(404);
    expect(await listAll(http, ALICE)).toEqual([]);
    expect((await http.getDownload(shared.id, as(ROOT))).status).toBe(200);
    const alices = await create(http, ALICE, { url: 'https://media.example.com/a.mp4' });
    const bobs = await create(http, BOB, { url: 'https://media.example.com/b.mp4' });

    // Alice's key is removed: she is locked out, her download stays for the admins (and expiry).
    http = await api({ apiKeys: [BOB], adminApiKeys: [ROOT] });
    expect((await http.getDownload(alices.id, as(ALICE))).status).toBe(401);
    expect((await http.getDownload(bobs.id, as(BOB))).status).toBe(200);
    expect(await listAll(http, BOB)).toEqual([bobs.id]);
    expect((await listAll(http, ROOT)).sort()).toEqual([shared.id, alices.id, bobs.id].sort());

    // Without keys again: one shared space, everything in it.
    http = await api({});
    expect((await listAll(http, 'no-key-needed')).sort()).toEqual([shared.id, alices.id, bobs.id].sort());
  });

  test('when the kept secret in DATA_DIR is short or empty, then the service refuses to start, naming it', async () => {
    const dir = await makeDataDir();
    try {
      for (const kept of ['', 'short\n', ' '.repeat(40)]) {
        await writeFile(path.join(dir, KEY_HASH_SECRET_FILE), kept, { mode: 0o600 });
        await expect(startService(testConfig(database.url, dir, { role: 'api', apiKeys: [ALICE] }))).rejects.toThrow(/key-hash-secret.*at least 32 characters/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('when two API processes with separate data directories share KEY_HASH_SECRET, then a key sees its downloads through either; with another secret it sees none', async () => {
    const secret = 'a'.repeat(16) + randomUUID();
    const [first, second, third] = await Promise.all([makeDataDir(), makeDataDir(), makeDataDir()]);
    try {
      let http = await api({ apiKeys: [ALICE], keyHashSecret: secret }, first);
      const { id } = await create(http, ALICE, { url: 'https://media.example.com/shared-secret.mp4' });
      http = await api({ apiKeys: [ALICE], keyHashSecret: secret }, second);
      expect((await http.getDownload(id, as(ALICE))).status).toBe(200);
      http = await api({ apiKeys: [ALICE] }, third);
      expect((await http.getDownload(id, as(ALICE))).status).toBe(404);
    } finally {
      await Promise.all([first, second, third].map((dir) => rm(dir, { recursive: true, force: true })));
    }
  });
});

describe('MAX_ACTIVE_DOWNLOADS_PER_KEY', () => {
  let app: TestService;

  beforeAll(async () => {
    // No worker: downloads stay queued, so they stay active.
    app = await startTestService({ role: 'api', apiKeys: [ALICE, BOB, CAROL], adminApiKeys: [ROOT], maxActiveDownloadsPerKey: 3 });
  });

  afterAll(async () => {
    await app?.stop();
  });

  test('when a key sends more creates at once than its limit, then exactly the limit is created and the rest get 429 with Retry-After; other keys and admins are not held back', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        app.http.createDownload({ url: `https://media.example.com/limit-${index}.mp4` }, { ...as(ALICE), 'Idempotency-Key': `limit-${index}` }),
      ),
    );
    const created = answers.filter((res) => res.status === 202);
    const refused = answers.filter((res) => res.status === 429);
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(5);
    for (const res of refused) {
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(bodyJson<{ detail: string }>(res).detail).toMatch(/MAX_ACTIVE_DOWNLOADS_PER_KEY/);
    }
    expect(await listAll(app.http, ALICE)).toHaveLength(3);

    // A repeat of a created one is still answered with it.
    const first = answers.findIndex((res) => res.status === 202);
    const replay = await app.http.createDownload(
      { url: `https://media.example.com/limit-${first}.mp4` },
      { ...as(ALICE), 'Idempotency-Key': `limit-${first}` },
    );
    expect(replay.status).toBe(202);
    expect((replay.body as Download).id).toBe((created[0]!.body as Download).id);

    await create(app.http, BOB, { url: 'https://media.example.com/bob.mp4' });
    for (let index = 0; index < 4; index++) await create(app.http, ROOT, { url: `https://media.example.com/root-${index}.mp4` });

    // Once one of hers has ended, alice may start one more, and no more.
    const cancelled = await app.http.request('DELETE', `/downloads/${(created[0]!.body as Download).id}`, '/downloads/{download_uuid}', { headers: as(ALICE) });
    expect(cancelled.status).toBe(200);
    await create(app.http, ALICE, { url: 'https://media.example.com/after-cancel.mp4' });
    expect((await app.http.createDownload({ url: 'https://media.example.com/one-too-many.mp4' }, as(ALICE))).status).toBe(429);
  });

  test('when creates of one key arrive at two API processes at once, then together they still create no more than the limit', async () => {
    const other = await startService(testConfig(app.config.databaseUrl!, app.config.dataDir, { role: 'api', apiKeys: [CAROL], maxActiveDownloadsPerKey: 3 }));
    try {
      const processes = [app.http, createHttp(other.url)];
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, index) => processes[index % 2]!.createDownload({ url: `https://media.example.com/race-${index}.mp4` }, as(CAROL))),
      );
      const created = answers.filter((res) => res.status === 202).length;
      expect(created).toBe(3);
      expect(answers.filter((res) => res.status === 429)).toHaveLength(12 - created);
      expect(await listAll(app.http, CAROL)).toHaveLength(3);
    } finally {
      await other.stop();
    }
  });

  test('when copies of one request with one Idempotency-Key arrive together for the last free place, then every copy gets the one download', async () => {
    const bob = async () => (await listAll(app.http, BOB)).length;
    while ((await bob()) < 2) await create(app.http, BOB, { url: `https://media.example.com/fill-${randomUUID()}.mp4` });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => app.http.createDownload({ url: 'https://media.example.com/last.mp4' }, { ...as(BOB), 'Idempotency-Key': 'last-place' })),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(6).fill(202));
    expect(new Set(answers.map((res) => (res.body as Download).id)).size).toBe(1);
    expect(await bob()).toBe(3);
  });

  test('when the service has no API keys, then there is no limit per key', async () => {
    const open = await startTestService({ role: 'api', maxActiveDownloadsPerKey: 1 });
    try {
      for (let index = 0; index < 3; index++) expect((await open.http.createDownload({ url: `https://media.example.com/open-${index}.mp4` })).status).toBe(202);
    } finally {
      await open.stop();
    }
  });
});

describe('the migration that gives downloads owners', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await database?.drop();
  });

  test('when it runs over rows from before, then they belong to nobody, keep their idempotency keys, and a key may reuse those keys', async () => {
    const names = (await readdir(migrationsDir, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    const owners = names.findIndex((name) => name.endsWith('_download_owner'));
    expect(owners).toBeGreaterThan(0);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const apply = async (name: string) => client.query(await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8'));
      for (const name of names.slice(0, owners)) await apply(name);
      const old = randomUUID();
      await client.query(
        `INSERT INTO downloads (id, url, quality, request_hash, idempotency_key, updated_at) VALUES ($1, 'https://e.example/a.mp4', 'best', 'h', 'k1', now())`,
        [old],
      );
      await apply(names[owners]!);

      expect((await client.query('SELECT owner, idempotency_key FROM downloads WHERE id = $1', [old])).rows).toEqual([{ owner: '', idempotency_key: 'k1' }]);
      const insert = (owner: string) =>
        client.query(
          `INSERT INTO downloads (id, owner, url, quality, request_hash, idempotency_key, updated_at) VALUES ($1, $2, 'https://e.example/b.mp4', 'best', 'h', 'k1', now())`,
          [randomUUID(), owner],
        );
      await insert('f'.repeat(64));
      await expect(insert('')).rejects.toThrow(/duplicate key/);
    } finally {
      await client.end();
    }
  });
});

async function waitCompleted(http: TestHttp, id: string, key: string): Promise<Download> {
  for (;;) {
    const now = (await http.getDownload(id, as(key))).body as Download;
    if (now.status === 'completed') return now;
    if (now.status === 'failed' || now.status === 'cancelled') throw new Error(`download ${id} ended ${now.status}: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the download has ended, whatever way, asked with the admin key. */
async function waitEnded(http: TestHttp, id: string): Promise<void> {
  for (;;) {
    const { status } = (await http.getDownload(id, as(ROOT))).body as Download;
    if (!['queued', 'downloading', 'processing'].includes(status)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Every row of every table of the database (the service's and pg-boss's), as text: what a dump would hold. */
async function dumpDatabase(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    const rows: string[] = [];
    for (const { name } of tables) rows.push(...(await client.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`)).rows.map((row) => row.row));
    return [...tables.map((table) => table.name), ...rows].join('\n');
  } finally {
    await client.end();
  }
}

async function ownersOf(url: string, ids: string[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ owner: string }>('SELECT owner FROM downloads WHERE id = ANY($1::uuid[])', [ids])).rows.map((row) => row.owner);
  } finally {
    await client.end();
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';

// GET /downloads: newest first, paged by cursor. The service runs without a worker, so the
// downloads stay as they were created unless a test changes them.

type Page = { items: Download[]; next_cursor: string | null };

const { app } = useService({ role: 'api' });

function list(query = '') {
  return app.http.request('GET', `/downloads${query}`, '/downloads');
}

async function createMany(count: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const created = await app.http.createDownload({ url: `https://media.example.com/${prefix}/${index}.mp4` });
    expect(created.status).toBe(202);
    ids.push((created.body as Download).id);
  }
  return ids;
}

function isNewestFirst(items: Download[]): boolean {
  return items.every((item, index) => {
    const before = items[index - 1];
    if (!before) return true;
    return before.created_at > item.created_at || (before.created_at === item.created_at && before.id > item.id);
  });
}

test('when a client pages through 250 downloads while new ones are created, then it sees each of them exactly once, newest first', async () => {
  const existing = await createMany(250, 'paged');
  const seen: Download[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await list(`?limit=17${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    const page = res.body as Page;
    expect(page.items.length).toBeLessThanOrEqual(17);
    seen.push(...page.items);
    cursor = page.next_cursor;
    pages += 1;
    // New downloads arrive between the pages, as they would on a busy server.
    await createMany(3, `during-${pages}`);
  } while (cursor);

  const ids = seen.map((download) => download.id);
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of existing) expect(ids.filter((seenId) => seenId === id)).toHaveLength(1);
  expect(isNewestFirst(seen)).toBe(true);
  // The first page was read before any of the later downloads existed.
  expect(seen.filter((download) => download.url.includes('/during-'))).toHaveLength(0);
  expect(pages).toBe(Math.ceil(250 / 17));

  const first = (await list('?limit=3')).body as Page;
  expect(first.items.map((download) => download.url)).toEqual([2, 1, 0].map((index) => `https://media.example.com/during-${pages}/${index}.mp4`));
});

test('when the list is filtered by status, then only downloads in those states come back', async () => {
  const [cancelled] = await createMany(1, 'filtered');
  await app.http.request('DELETE', `/downloads/${cancelled}`, '/downloads/{download_uuid}');
  const only = (await list('?status=cancelled')).body as Page;
  expect(only.items.map((download) => download.id)).toEqual([cancelled]);
  const either = (await list('?status=cancelled,queued&limit=100')).body as Page;
  expect(either.items[0]!.id).toBe(cancelled);
  expect(new Set(either.items.map((download) => download.status))).toEqual(new Set(['cancelled', 'queued']));
  expect(((await list('?status=completed')).body as Page).items).toEqual([]);
});

test('when the default page is asked for, then it has 20 downloads and a cursor; the last page has a null cursor', async () => {
  const page = (await list()).body as Page;
  expect(page.items).toHaveLength(20);
  expect(typeof page.next_cursor).toBe('string');
  const last = (await list('?status=cancelled')).body as Page;
  expect(last.next_cursor).toBeNull();
});

test.each([
  ['limit=0', '/query/limit'],
  ['limit=101', '/query/limit'],
  ['limit=ten', '/query/limit'],
  // Numbers the validator's coercion would take (Number('1e1') is 10), but not in decimal digits.
  ['limit=1e1', '/query/limit'],
  ['limit=0x10', '/query/limit'],
  // Digits that make Infinity, which neither bound of the schema stops.
  [`limit=${'9'.repeat(309)}`, '/query/limit'],
  [`limit=-${'9'.repeat(309)}`, '/query/limit'],
  ['limit=10.0', '/query/limit'],
  ['limit=%2B10', '/query/limit'],
  ['limit=%2010', '/query/limit'],
  ['limit=20&limit=1e1', '/query/limit'],
  ['status=paused', '/query/status'],
  ['cursor=bm90LWEtY3Vyc29y', '/query/cursor'],
  ['cursor=' + 'x'.repeat(201), '/query/cursor'],
  ['colour=red', '/query/colour'],
  // Bracketed names, which the validator would read as objects.
  ['status[a]=completed', '/query/status[a]'],
  ['status[=x', '/query/status['],
  ['status[]=completed', '/query/status[]'],
])('when the query has %s, then it is a 400 problem naming %s (or an item of it)', async (query, field) => {
  const res = await list(`?${query}`);
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const problem = res.body as { errors: { field: string }[] };
  // A bad item of a list is named by its position (`/query/status/0`).
  expect(problem.errors.some((error) => error.field === field || error.field.startsWith(`${field}/`))).toBe(true);
});

test('when PostgreSQL plans a page, then an index serves the order and the cursor, not a sort of the whole table', async () => {
  const client = new pg.Client({ connectionString: app.config.databaseUrl });
  await client.connect();
  try {
    await client.query('ANALYZE downloads');
    // Small tables are cheaper to scan whole; what matters is that an index can serve the query.
    await client.query('SET enable_seqscan = off');
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT * FROM downloads WHERE true AND (created_at, id) < (now(), '00000000-0000-4000-8000-000000000000'::uuid)
        ORDER BY created_at DESC, id DESC LIMIT 21`,
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Index Scan Backward using downloads_created_at_id_idx/);
    expect(plan).not.toMatch(/Sort/);
  } finally {
    await client.end();
  }
});

test('when a list filtered by status finds downloads whose files are gone, then they turn expired and the page is still full, with a cursor that goes on after it', async () => {
  const ids = await createMany(6, 'lost-files');
  // Newest first: the two newest and one further down have lost their files.
  const lost = [ids[5]!, ids[4]!, ids[1]!];
  const client = new pg.Client({ connectionString: app.config.databaseUrl });
  await client.connect();
  try {
    await client.query(
      `UPDATE downloads SET status = 'completed', completed_at = now(), expires_at = now() + interval '1 day', token_secret = 'secret',
              file_name = 'clip.mp4', content_type = 'video/mp4', size_bytes = 4, sha256 = repeat('0', 64)
        WHERE id = ANY($1::uuid[])`,
      [ids],
    );
  } finally {
    await client.end();
  }
  const files = path.join(app.config.dataDir, 'files');
  await mkdir(files, { recursive: true });
  for (const id of ids) if (!lost.includes(id)) await writeFile(path.join(files, id), 'clip');

  const first = (await list('?status=completed&limit=2')).body as Page;
  expect(first.items.map((download) => download.id)).toEqual([ids[3], ids[2]]);
  expect(first.next_cursor).not.toBeNull();
  const second = (await list(`?status=completed&limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`)).body as Page;
  expect(second.items.map((download) => download.id)).toEqual([ids[0]]);
  expect(second.next_cursor).toBeNull();
  const expired = (await list('?status=expired&limit=100')).body as Page;
  expect(expired.items.map((download) => download.id)).toEqual(lost);
});

import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import pg from 'pg';
import supertest from 'supertest';
import { bodyJson, type Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { checkResponse } from './support/openapi.ts';

type Problem = { type: string; title: string; status: number; detail: string; errors?: { field: string; message: string }[] };

let db: pg.Client;
let clipUrl: string;
const { app, source } = useService({}, { beforeStop: async () => await db?.end() });

beforeAll(async () => {
  clipUrl = source.file('/clip.mp4', mediaPath('clip.mp4'));
  db = new pg.Client({ connectionString: app.config.databaseUrl });
  await db.connect();
});

async function counts(): Promise<{ downloads: number; jobs: number }> {
  const downloads = await db.query<{ n: string }>('SELECT count(*) AS n FROM downloads');
  const jobs = await db.query<{ n: string }>("SELECT count(*) AS n FROM pgboss.job WHERE name = 'download'");
  return { downloads: Number(downloads.rows[0]!.n), jobs: Number(jobs.rows[0]!.n) };
}

describe('POST /downloads', () => {
  test('when a media URL is posted, then it answers 202 with Location and a queued download', async () => {
    const res = await app.http.createDownload({ url: clipUrl });
    expect(res.status).toBe(202);
    const download = res.body as Download;
    expect(res.headers.location).toBe(`/downloads/${download.id}`);
    expect(download).toMatchObject({ url: clipUrl, quality: 'best', token: null, download_url: null, file: null, error: null });
    expect(['queued', 'downloading', 'processing', 'completed']).toContain(download.status);
  });

  test('when quality is a height, then it is kept as a number', async () => {
    const res = await app.http.createDownload({ url: clipUrl, quality: 720, filename: 'my clip' });
    expect(res.status).toBe(202);
    expect((res.body as Download).quality).toBe(720);
  });

  test.each([
    ['the url is missing', {}, '/body/url'],
    ['the url is not http(s)', { url: 'ftp://example.com/a.mp4' }, '/body/url'],
    ['the url is not a URL', { url: 'not a url' }, '/body/url'],
    ['the url is longer than 2048 characters', { url: `http://example.com/${'a'.repeat(2040)}` }, '/body/url'],
    ['quality is an unknown word', { url: 'http://example.com/a.mp4', quality: 'great' }, '/body/quality'],
    ['quality is a height written as a string', { url: 'http://example.com/a.mp4', quality: '720' }, '/body/quality'],
    ['a field is unknown', { url: 'http://example.com/a.mp4', format: 'mp4' }, '/body/format'],
    ['callback_url is not http(s)', { url: 'http://example.com/a.mp4', callback_url: 'javascript:alert(1)' }, '/body/callback_url'],
    ['the url has port 0', { url: 'http://example.com:0/a.mp4' }, '/body/url'],
  ])('when %s, then 400 names the field and nothing is created', async (_case, body, field) => {
    const before = await counts();
    const res = await app.http.createDownload(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.body as Problem;
    expect(problem.errors?.map((error) => error.field)).toContain(field);
    expect(await counts()).toEqual(before);
  });

  test.each(['ftp://example.com/a.mp4', 'not a url', 'http://example.com/<a>', ''])(
    'when the url is %j, then its error says what a link must be, not the pattern it failed',
    async (url) => {
      const problem = (await app.http.createDownload({ url })).body as Problem;
      expect(problem.errors).toContainEqual({ field: '/body/url', message: 'must be a full link starting with http:// or https://' });
    },
  );

  test('when the body is not valid JSON, then 400 problem+json', async () => {
    const res = await app.http.createDownload('{"url": ');
    expect(res.status).toBe(400);
    expect(bodyJson<Problem>(res).detail).toMatch(/not valid JSON/);
  });

  test('when the body is not JSON at all, then 415', async () => {
    const res = await app.http.createDownload(`url=${clipUrl}`, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  test('when the body is larger than 16 KiB, then 413 and nothing is created', async () => {
    const before = await counts();
    const res = await app.http.createDownload({ url: clipUrl, filename: 'x'.repeat(20_000) });
    expect(res.status).toBe(413);
    expect(await counts()).toEqual(before);
  });
});

describe('Content-Encoding', () => {
  const encoders = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };
  const encodings = Object.keys(encoders) as (keyof typeof encoders)[];

  /** POST /downloads with `body` as it is: the test client would send a Buffer labelled JSON as JSON text. */
  async function postBytes(body: Buffer, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${app.service.url}/downloads`, { method: 'POST', headers, body });
    const text = await res.text();
    checkResponse({
      method: 'POST',
      pathTemplate: '/downloads',
      status: res.status,
      headers: Object.fromEntries(res.headers),
      body: text,
      hasBody: text.length > 0,
    });
    return { status: res.status, body: JSON.parse(text) };
  }

  test.each(encodings)('when the body is compressed with %s and says so, then it is decoded and 202', async (encoding) => {
    const body = encoders[encoding](JSON.stringify({ url: clipUrl }));
    const res = await postBytes(body, { 'Content-Type': 'application/json', 'Content-Encoding': encoding });
    expect(res.status).toBe(202);
    expect((res.body as Download).url).toBe(clipUrl);
  });

  test.each(encodings)('when Content-Encoding says %s but the body is plain JSON, then 400 problem+json saying it could not be decoded', async (encoding) => {
    const before = await counts();
    const res = await app.http.createDownload(JSON.stringify({ url: clipUrl }), { 'Content-Type': 'application/json', 'Content-Encoding': encoding });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = bodyJson<Problem>(res);
    expect(problem.detail).toMatch(new RegExp(`could not be decoded as ${encoding}`));
    expect(problem.errors?.map((error) => error.field)).toEqual(['/body']);
    expect(await counts()).toEqual(before);
  });

  test('when a GET carries a plain body labelled gzip, then it is answered as without one: only the operations that take a body read one', async () => {
    const res = await app.http.request('GET', '/downloads/6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11', '/downloads/{download_uuid}', {
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(bodyJson<Problem>(res).detail).toMatch(/No download/);
  });
});

describe('Idempotency-Key', () => {
  test('when the same key comes with the same body, then the first download is returned', async () => {
    const headers = { 'Idempotency-Key': 'same-body' };
    const first = await app.http.createDownload({ url: clipUrl }, headers);
    const second = await app.http.createDownload({ url: clipUrl, quality: 'best' }, headers);
    expect(second.status).toBe(202);
    expect((second.body as Download).id).toBe((first.body as Download).id);
  });

  test('when the same key comes with another body, then 409 and nothing is created', async () => {
    const headers = { 'Idempotency-Key': 'other-body' };
    await app.http.createDownload({ url: clipUrl }, headers);
    const before = await counts();
    const res = await app.http.createDownload({ url: clipUrl, quality: 'worst' }, headers);
    expect(res.status).toBe(409);
    expect((res.body as Problem).detail).toMatch(/other-body/);
    expect(await counts()).toEqual(before);
  });

  test('when twenty requests with one key arrive at once, then exactly one download and one job exist', async () => {
    const before = await counts();
    const headers = { 'Idempotency-Key': 'concurrent' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => app.http.createDownload({ url: clipUrl }, headers)));
    expect(responses.map((res) => res.status)).toEqual(Array(20).fill(202));
    expect(new Set(responses.map((res) => (res.body as Download).id)).size).toBe(1);
    expect(await counts()).toEqual({ downloads: before.downloads + 1, jobs: before.jobs + 1 });
  });
});

describe('transactional enqueue', () => {
  test('when downloads are created, then every download has exactly one job and every job its download', async () => {
    await Promise.all(Array.from({ length: 5 }, () => app.http.createDownload({ url: clipUrl })));
    const orphans = await db.query(`
      SELECT d.id, count(j.id) AS jobs FROM downloads d
        LEFT JOIN pgboss.job j ON j.name = 'download' AND (j.data->>'download_id')::uuid = d.id
       GROUP BY d.id HAVING count(j.id) <> 1
      UNION ALL
      SELECT (j.data->>'download_id')::uuid, 0 FROM pgboss.job j
       WHERE j.name = 'download' AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.id = (j.data->>'download_id')::uuid)`);
    expect(orphans.rows).toEqual([]);
  });

  /**
   * ALTER TABLE on pg-boss's job table, which locks each queue's partition in turn: it can meet
   * pg-boss's own work on two partitions (its schedule, its maintenance) in the other order, and
   * PostgreSQL then ends one of the two as a deadlock. Ours goes again.
   */
  async function alterJobs(change: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await db.query(`ALTER TABLE pgboss.job ${change}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
      }
    }
  }

  test('when the job cannot be written, then the download is not written either and the answer is 500 problem+json', async () => {
    const before = await counts();
    // Every new job now violates a constraint, so the insert of the job fails inside the transaction.
    await alterJobs("ADD CONSTRAINT test_refuse_jobs CHECK (name <> 'download') NOT VALID");
    try {
      const res = await app.http.createDownload({ url: clipUrl });
      expect(res.status).toBe(500);
      expect((res.body as Problem).detail).toBe('An unexpected error occurred.');
      expect(JSON.stringify(res.body)).not.toMatch(/constraint|pgboss|at .*\.ts/);
    } finally {
      await alterJobs('DROP CONSTRAINT test_refuse_jobs');
    }
    expect(await counts()).toEqual(before);
  });
});

describe('GET /downloads/{download_uuid}', () => {
  test('when the id is unknown, then 404 problem+json', async () => {
    const res = await app.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11');
    expect(res.status).toBe(404);
    expect((res.body as Problem).status).toBe(404);
  });

  test('when the id is not a UUID, then 400 names the parameter', async () => {
    const res = await app.http.getDownload('not-a-uuid');
    expect(res.status).toBe(400);
    expect((res.body as Problem).errors?.[0]?.field).toBe('/params/download_uuid');
  });

  test('when the path is not an operation, then 404 problem+json', async () => {
    // Not an operation of the contract, so there is no documented answer to check it against.
    const res = await supertest(app.service.url).get('/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('file name', () => {
  test('when the filename carries Unicode format characters, then the stored name and its Content-Disposition have none', async () => {
    // U+202E would show "...wd\u202e4pm.exe" as "...wdexe.mp4": a name that hides its real extension.
    const filename = 'pa\u200bss\u2066wd\u202e4pm\ufeff.exe\u200d\u2069';
    const created = await app.http.createDownload({ url: clipUrl, filename });
    expect(created.status).toBe(202);
    const done = await app.waitForStatus((created.body as Download).id, ['completed']);
    expect(done.file!.filename).toBe('passwd4pm.exe.mp4');
    const res = await app.http.getFile(done.token!);
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toContain("filename*=UTF-8''passwd4pm.exe.mp4");
  });

  test('when the filename carries half of a surrogate pair, then the name keeps U+FFFD in its place', async () => {
    // JSON may escape one half alone ("\ud800"), which no UTF-8 text can hold.
    const created = await app.http.createDownload({ url: clipUrl, filename: 'half\ud800pair' });
    expect(created.status).toBe(202);
    const done = await app.waitForStatus((created.body as Download).id, ['completed']);
    expect(done.file!.filename).toBe('half\ufffdpair.mp4');
  });
});

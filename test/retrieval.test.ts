import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { bodyJson, type Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { rawHead } from './support/raw-head.ts';
import { startS3Server, type S3Server } from './support/s3-server.ts';
import { waitFor } from './support/waiting.ts';

// Every store serves files alike: the local directory, and an S3 bucket (streamed by the service).
describe.each(['local', 's3'] as const)('with %s storage', (kind) => {
  let done: Download;
  let original: Buffer;
  let s3: S3Server | undefined;

  /** Whether the list of downloads in `status` holds `id` (the newest 100: more than a file makes). */
  const listed = async (id: string, status: string) =>
    bodyJson<{ items: Download[] }>(await app.http.request('GET', `/downloads?status=${status}&limit=100`, '/downloads')).items.some((item) => item.id === id);

  /** Takes the stored file away behind the service's back, as another process or a person would. */
  const removeStored = (id: string) => (s3 ? s3.removeObject(id) : rm(path.join(app.config.dataDir, 'files', id)));

  beforeAll(async () => {
    s3 = kind === 's3' ? await startS3Server() : undefined;
  });

  const { app, source } = useService(() => (s3 ? { storage: s3.settings() } : {}));

  beforeAll(async () => {
    original = await readFile(mediaPath('clip.mp4'));
    const created = await app.http.createDownload({ url: source.file('/clip.mp4', mediaPath('clip.mp4')), filename: 'Vidéo «été» 日本' });
    done = await app.waitForStatus(created.body.id as string, ['completed']);
  });

  afterAll(async () => {
    await s3?.close();
  });

  describe('GET /download/{token}', () => {
    test('when the whole file is asked for, then it comes with its length, type, validators and an attachment name', async () => {
      const res = await app.http.getFile(done.token!);
      expect(res.status).toBe(200);
      expect(res.body.equals(original)).toBe(true);
      expect(res.headers).toMatchObject({
        'content-type': 'video/mp4',
        'content-length': String(original.length),
        'accept-ranges': 'bytes',
        etag: `"${done.file!.sha256}"`,
      });
      expect(new Date(res.headers['last-modified']!).getTime()).toBe(Math.floor(Date.parse(done.completed_at!) / 1000) * 1000);
      expect(res.headers['content-disposition']).toContain(`filename*=UTF-8''${encodeURIComponent('Vidéo «été» 日本.mp4')}`);
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="[\x20-\x7e]+"/);
    });

    test('when a plain ASCII name is served, then filename* is still there', async () => {
      const created = await app.http.createDownload({ url: source.file('/plain.mp4', mediaPath('clip.mp4')) });
      const plain = await app.waitForStatus(created.body.id as string, ['completed']);
      const res = await app.http.headFile(plain.token!);
      expect(res.headers['content-disposition']).toBe("attachment; filename=plain.mp4; filename*=UTF-8''plain.mp4");
    });

    test('when a range is asked for, then 206 carries exactly those bytes', async () => {
      const res = await app.http.getFile(done.token!, { Range: 'bytes=100-1099' });
      expect(res.status).toBe(206);
      expect(res.headers['content-range']).toBe(`bytes 100-1099/${original.length}`);
      expect(res.body.equals(original.subarray(100, 1100))).toBe(true);
    });

    test('when a suffix range is asked for, then the last bytes come back', async () => {
      const res = await app.http.getFile(done.token!, { Range: 'bytes=-500' });
      expect(res.status).toBe(206);
      expect(res.body.equals(original.subarray(original.length - 500))).toBe(true);
    });

    test('when If-Range names the file, then the range holds; when it names another version, then the whole file comes', async () => {
      const range = { Range: 'bytes=10-19' };
      const same = await app.http.getFile(done.token!, { ...range, 'If-Range': `"${done.file!.sha256}"` });
      expect(same.status).toBe(206);
      expect(same.body.equals(original.subarray(10, 20))).toBe(true);
      const byDate = await app.http.getFile(done.token!, { ...range, 'If-Range': new Date(Date.now() + 60_000).toUTCString() });
      expect(byDate.status).toBe(206);
      const other = await app.http.getFile(done.token!, { ...range, 'If-Range': '"another-version"' });
      expect(other.status).toBe(200);
      expect(other.body.equals(original)).toBe(true);
      const older = await app.http.getFile(done.token!, { ...range, 'If-Range': new Date(0).toUTCString() });
      expect(older.status).toBe(200);
    });

    test('when the range unit is written in another case (BYTES=, Bytes=), then it is a range all the same (RFC 9110 14.1)', async () => {
      for (const unit of ['BYTES', 'Bytes']) {
        const res = await app.http.getFile(done.token!, { Range: `${unit}=0-9` });
        expect([unit, res.status, res.headers['content-range']]).toEqual([unit, 206, `bytes 0-9/${original.length}`]);
        expect(res.body.equals(original.subarray(0, 10))).toBe(true);
      }
      const suffix = await app.http.getFile(done.token!, { Range: `BYTES=-${original.length * 10}` });
      expect([suffix.status, suffix.headers['content-range']]).toEqual([206, `bytes 0-${original.length - 1}/${original.length}`]);
      const past = await app.http.getFile(done.token!, { Range: `BYTES=${original.length + 10}-` });
      expect([past.status, past.headers['content-range']]).toEqual([416, `bytes */${original.length}`]);
      // If-Range still decides whether the range holds.
      const same = await app.http.getFile(done.token!, { Range: 'BYTES=10-19', 'If-Range': `"${done.file!.sha256}"` });
      expect(same.status).toBe(206);
      expect(same.body.equals(original.subarray(10, 20))).toBe(true);
      const other = await app.http.getFile(done.token!, { Range: 'BYTES=10-19', 'If-Range': '"another-version"' });
      expect(other.status).toBe(200);
      expect(other.body.equals(original)).toBe(true);
    });

    test('when several ranges are asked for, then the whole file answers them', async () => {
      const res = await app.http.getFile(done.token!, { Range: 'bytes=0-9,100-109' });
      expect(res.status).toBe(200);
      expect(res.body.equals(original)).toBe(true);
    });

    test('when the client hangs up mid-file, then the service goes on answering', async () => {
      const controller = new AbortController();
      const res = await fetch(done.download_url!, { signal: controller.signal });
      await res.body!.getReader().read();
      controller.abort();
      expect((await app.http.getFile(done.token!, { Range: 'bytes=0-0' })).status).toBe(206);
    });

    test('when clients hang up mid-file, then the open file that requests share stays open for the next ones', async () => {
      // Larger than the loopback's socket buffers hold, so that the service is still reading the file when its client goes.
      const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-padded-'));
      const padded = path.join(dir, 'padded.mp4');
      await writeFile(padded, Buffer.concat([original, freeBox(32 * 1024 * 1024)]));
      const created = await app.http.createDownload({ url: source.file('/padded.mp4', padded) });
      const big = await app.waitForStatus(created.body.id as string, ['completed']);
      for (let i = 0; i < 3; i++) await hangUpAfterFirstBytes(big.download_url!);
      const whole = await app.http.getFile(big.token!);
      expect(whole.status).toBe(200);
      expect(createHash('sha256').update(whole.body).digest('hex')).toBe(big.file!.sha256);
      await rm(dir, { recursive: true, force: true });
    });

    test('when the stored file is removed behind the service (by another process), then within about a second it answers 410', async () => {
      const created = await app.http.createDownload({ url: source.file('/removed.mp4', mediaPath('clip.mp4')) });
      const removed = await app.waitForStatus(created.body.id as string, ['completed']);
      expect((await app.http.getFile(removed.token!, { Range: 'bytes=0-0' })).status).toBe(206);
      await removeStored(removed.id);
      const started = Date.now();
      let status = 206;
      while (status !== 410 && Date.now() - started < 5_000) {
        status = (await app.http.getFile(removed.token!, { Range: 'bytes=0-0' })).status;
        // Never an error on the way: the file, or the news that it is gone.
        expect([206, 410]).toContain(status);
        if (status !== 410) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(410);
      expect(Date.now() - started).toBeLessThan(2_500);
    });

    test('when the stored file is lost (removed by hand), then GET /downloads/{id} says expired, and the list and the file link agree', async () => {
      const created = await app.http.createDownload({ url: source.file('/lost.mp4', mediaPath('clip.mp4')) });
      const lost = await app.waitForStatus(created.body.id as string, ['completed']);
      await removeStored(lost.id);
      // A bucket's store takes the object's presence from a HEAD up to 5 s old (the look that saw it
      // completed); a local file is looked for each time.
      const now = await waitFor(
        'GET /downloads/{id} to say expired',
        async () => {
          const seen = bodyJson<Download>(await app.http.getDownload(lost.id));
          return seen.status === 'expired' && seen;
        },
        kind === 's3' ? 5_000 + 2_000 : 0,
      );
      expect(now).toMatchObject({ status: 'expired', token: null, download_url: null, file: { sha256: lost.file!.sha256 } });
      expect(Date.parse(now.expires_at!)).toBeLessThanOrEqual(Date.now());
      expect(await listed(lost.id, 'expired')).toBe(true);
      const link = await app.http.getFile(lost.token!);
      expect(link.status).toBe(410);
      expect(bodyJson<{ detail: string }>(link).detail).toMatch(/expired/);
    });

    test('when the file link finds the stored file lost, then the download is expired for the list too', async () => {
      const created = await app.http.createDownload({ url: source.file('/lost-link.mp4', mediaPath('clip.mp4')) });
      const lost = await app.waitForStatus(created.body.id as string, ['completed']);
      await removeStored(lost.id);
      expect((await app.http.getFile(lost.token!)).status).toBe(410);
      expect(await listed(lost.id, 'expired')).toBe(true);
      expect(await listed(lost.id, 'completed')).toBe(false);
    });

    test('when a suffix range asks for more than the file, then the whole file comes as 206', async () => {
      const res = await app.http.getFile(done.token!, { Range: `bytes=-${original.length * 10}` });
      expect(res.status).toBe(206);
      expect(res.headers['content-range']).toBe(`bytes 0-${original.length - 1}/${original.length}`);
      expect(res.body.equals(original)).toBe(true);
    });

    test('when a Range makes no sense (5-1, letters), then it is ignored and the whole file comes', async () => {
      for (const range of ['bytes=5-1', 'bytes=abc', 'items=0-5']) {
        const res = await app.http.getFile(done.token!, { Range: range });
        expect({ range, status: res.status }).toEqual({ range, status: 200 });
        expect(res.body.length).toBe(original.length);
      }
    });

    test('when If-Modified-Since lies in the future, then it is ignored', async () => {
      const res = await app.http.getFile(done.token!, { 'If-Modified-Since': new Date(Date.now() + 86_400_000).toUTCString() });
      expect(res.status).toBe(200);
    });

    test('when the range lies past the end, then 416 with the full size', async () => {
      const res = await app.http.getFile(done.token!, { Range: `bytes=${original.length + 10}-` });
      expect(res.status).toBe(416);
      expect(res.headers['content-range']).toBe(`bytes */${original.length}`);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['content-disposition']).toBeUndefined();
      expect(bodyJson<{ status: number }>(res).status).toBe(416);
    });

    test('when If-None-Match carries the ETag, then 304 without a body', async () => {
      const res = await app.http.getFile(done.token!, { 'If-None-Match': `"${done.file!.sha256}"` });
      expect(res.status).toBe(304);
      expect(res.body.length).toBe(0);
    });

    test.each<Record<string, string>>([
      { 'Cache-Control': 'no-cache' },
      { Pragma: 'no-cache' },
      { 'Cache-Control': 'max-age=0, no-cache', Pragma: 'no-cache' },
    ])('when If-None-Match matches and the request also says %o, as fetch() clients do, then still 304', async (noCache) => {
      const etag = `"${done.file!.sha256}"`;
      const res = await app.http.getFile(done.token!, { 'If-None-Match': `"other", ${etag}`, ...noCache });
      expect(res.status).toBe(304);
      expect(res.headers.etag).toBe(etag);
      expect(res.body.length).toBe(0);
      expect((await app.http.headFile(done.token!, { 'If-None-Match': etag, ...noCache })).status).toBe(304);
      // A validator that does not match still gets the whole file.
      const changed = await app.http.getFile(done.token!, { 'If-None-Match': '"other"', ...noCache });
      expect(changed.status).toBe(200);
      expect(changed.body.equals(original)).toBe(true);
    });

    test('when HEAD is sent, then the headers of the file come without a body', async () => {
      const res = await app.http.headFile(done.token!);
      expect(res.status).toBe(200);
      expect(res.headers['content-length']).toBe(String(original.length));
      // Over a socket of its own: supertest never reads what follows the headers of a HEAD.
      const raw = await rawHead(app.service.url, `/download/${done.token!}`);
      expect([raw.status, raw.afterHeaders.length]).toEqual([200, 0]);
    });

    test('when any one character of the token is altered, then 404 problem+json, never a 500', async () => {
      const token = done.token!;
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
      for (let i = 0; i < token.length; i += 3) {
        const replacement = alphabet[(alphabet.indexOf(token[i]!) + 1) % alphabet.length]!;
        const altered = token.slice(0, i) + replacement + token.slice(i + 1);
        const res = await app.http.getFile(altered);
        expect([i, res.status]).toEqual([i, 404]);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    });

    test('when the token is unknown or malformed, then 404', async () => {
      for (const token of ['nope', 'AAAAAAAAAAAAAAAAAAAAAA.secret', `${done.token!}x`, 'a.b.c']) {
        const res = await app.http.getFile(token);
        expect([token, res.status]).toEqual([token, 404]);
      }
    });

    test('when HEAD is sent for an unknown token, then 404 without a body', async () => {
      const res = await app.http.headFile('AAAAAAAAAAAAAAAAAAAAAA.secret');
      expect(res.status).toBe(404);
    });

    test('when a file link is asked for plainly and in a form only Express routes, then both answers are the same', async () => {
      // The plain form is answered before Express (file-shortcut.ts); a percent-encoded dot is the
      // same token to Express's router and the validator, and goes through them.
      const base = new URL(done.download_url!).origin;
      const ignored = new Set(['date', 'x-request-id', 'keep-alive', 'connection']);
      const headersOf = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => !ignored.has(name)));
      for (const [token, init] of [
        [done.token!, { headers: { Range: 'bytes=10-99' } }],
        [done.token!, { method: 'HEAD' }],
        [done.token!, { headers: { 'If-None-Match': `"${done.file!.sha256}"` } }],
        [done.token!, { headers: { Range: `bytes=${original.length}-` } }],
        ['AAAAAAAAAAAAAAAAAAAAAA.secret', {}],
      ] as const) {
        const plain = await fetch(`${base}/download/${token}`, init);
        const viaExpress = await fetch(`${base}/download/${token.replace('.', '%2E')}`, init);
        expect([token, init, plain.status, headersOf(plain)]).toEqual([token, init, viaExpress.status, headersOf(viaExpress)]);
        expect(Buffer.from(await plain.arrayBuffer()).equals(Buffer.from(await viaExpress.arrayBuffer()))).toBe(true);
        // helmet's headers and the request's id are there, and so, by the comparison, on both.
        expect(plain.headers.get('content-security-policy')).toContain("default-src 'self'");
        expect(plain.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
        expect(plain.headers.get('x-request-id')).toMatch(/^[\w.:-]+$/);
      }
    });

    test('when a file link carries a query that a player or cache added, then it is ignored, in the plain form and in one only Express routes', async () => {
      const base = new URL(done.download_url!).origin;
      for (const token of [done.token!, done.token!.replace('.', '%2E')]) {
        for (const query of ['?t=123', '?t=123&cache=no&t=7', '?a[b]=1', '?']) {
          const res = await fetch(`${base}/download/${token}${query}`, { headers: { Range: 'bytes=10-19' } });
          expect([token, query, res.status]).toEqual([token, query, 206]);
          expect(Buffer.from(await res.arrayBuffer()).equals(original.subarray(10, 20))).toBe(true);
          const head = await fetch(`${base}/download/${token}${query}`, { method: 'HEAD' });
          expect([token, query, head.status, head.headers.get('content-length')]).toEqual([token, query, 200, String(original.length)]);
        }
      }
    });

    test('when another operation carries an unknown query parameter, then it is still refused with problem+json', async () => {
      const res = await fetch(`${new URL(done.download_url!).origin}/downloads/${done.id}?t=123`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    });

    test('when the file has expired, then 410', async () => {
      const db = new pg.Client({ connectionString: app.config.databaseUrl });
      await db.connect();
      const created = await app.http.createDownload({ url: source.file('/old.mp4', mediaPath('clip.mp4')) });
      const old = await app.waitForStatus(created.body.id as string, ['completed']);
      await db.query(`UPDATE downloads SET expires_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
      await db.end();
      const res = await app.http.getFile(old.token!);
      expect(res.status).toBe(410);
      expect(bodyJson<{ detail: string }>(res).detail).toMatch(/expired/);
    });

    test('when a stored type is not one of the known containers (a row from before the container table), then the file is served as application/octet-stream', async () => {
      const created = await app.http.createDownload({ url: source.file('/typed.mp4', mediaPath('clip.mp4')) });
      const typed = await app.waitForStatus(created.body.id as string, ['completed']);
      const db = new pg.Client({ connectionString: app.config.databaseUrl });
      await db.connect();
      await db.query(`UPDATE downloads SET content_type = 'video/x, text/html' WHERE id = $1`, [typed.id]);
      await db.end();
      const res = await app.http.headFile(typed.token!);
      expect(res.headers['content-type']).toBe('application/octet-stream');
    });
  });
});

/** An MP4 `free` box of `size` bytes: padding that every reader of the container skips. */
function freeBox(size: number): Buffer {
  const box = Buffer.alloc(size);
  box.writeUInt32BE(size, 0);
  box.write('free', 4, 'latin1');
  return box;
}

/** Asks for the whole file, reads its first bytes, stops reading, and goes away while the service is still sending. */
function hangUpAfterFirstBytes(url: string): Promise<void> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
    socket.once('error', reject);
    socket.once('data', () => {
      socket.pause();
      setTimeout(() => {
        socket.destroy();
        // Time for the service to see the hang-up and let go of what it was reading.
        setTimeout(resolve, 100);
      }, 200);
    });
  });
}

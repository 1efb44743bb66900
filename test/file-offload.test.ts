import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { offloadServer, offloadUpstream } from '../tools/nginx-config.ts';
import { createHttp, type Download, type TestHttp } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { startNginx, type Nginx } from './support/nginx.ts';

// FILE_OFFLOAD=nginx: Debian's nginx in front of the service, configured as docs/operating.md says. The
// service decides whether a token may have its file; nginx sends the bytes, with ranges and
// conditional requests of its own.

const { app, source } = useService({ fileOffload: 'nginx' });
let nginx: Nginx;
let nginxDir: string;
let proxied: TestHttp;
let original: Buffer;

beforeAll(async () => {
  nginxDir = await mkdtemp(path.join(os.tmpdir(), 'vds-nginx-'));
  nginx = await startNginx(nginxDir, offloadServer(path.join(app.config.dataDir, 'files')), { http: offloadUpstream(app.service.url) });
  proxied = createHttp(nginx.url);
  original = await readFile(mediaPath('clip.mp4'));
});

afterAll(async () => {
  await nginx?.stop();
  if (nginxDir) await rm(nginxDir, { recursive: true, force: true });
});

async function completedDownload(name: string): Promise<Download> {
  const created = await proxied.createDownload({ url: source.file(`/${name}.mp4`, mediaPath('clip.mp4')), filename: `Vidéo ${name}` });
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed']);
}

test('when a file is asked for through nginx, then nginx sends it whole, with the type and name the service gave', async () => {
  const done = await completedDownload('whole');
  const res = await proxied.getFile(done.token!);
  expect(res.status).toBe(200);
  expect(createHash('sha256').update(res.body).digest('hex')).toBe(done.file!.sha256);
  expect(res.headers).toMatchObject({
    'content-type': 'video/mp4',
    'content-length': String(original.length),
    'accept-ranges': 'bytes',
    'cache-control': 'private, no-transform',
    server: expect.stringMatching(/^nginx/),
  });
  expect(res.headers['content-disposition']).toContain(`filename*=UTF-8''${encodeURIComponent('Vidéo whole.mp4')}`);
  expect(res.headers['x-accel-redirect']).toBeUndefined();
  // nginx's validator (the file's time and size in hex), not the service's sha256: nginx sent it.
  expect(res.headers.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);

  // Asked directly, the service only says where the file is.
  const direct = await fetch(done.download_url!);
  expect(direct.headers.get('x-accel-redirect')).toBe(`/_vds_files/${done.id}`);
  expect((await direct.arrayBuffer()).byteLength).toBe(0);

  const head = await proxied.headFile(done.token!);
  expect(head.status).toBe(200);
  expect(head.headers['content-length']).toBe(String(original.length));
});

test('when a range is asked for through nginx, then 206 carries exactly those bytes', async () => {
  const done = await completedDownload('range');
  const res = await proxied.getFile(done.token!, { Range: 'bytes=100-1099' });
  expect(res.status).toBe(206);
  expect(res.headers['content-range']).toBe(`bytes 100-1099/${original.length}`);
  expect(res.body.equals(original.subarray(100, 1100))).toBe(true);
});

test("when a request repeats nginx's validators, then nginx answers 304, also to a fetch() client's no-cache", async () => {
  const done = await completedDownload('validators');
  const first = await proxied.headFile(done.token!);
  const etag = first.headers.etag!;
  const lastModified = first.headers['last-modified']!;
  expect(etag).toMatch(/^"[^"]+"$/);
  expect((await proxied.getFile(done.token!, { 'If-None-Match': etag })).status).toBe(304);
  expect((await proxied.getFile(done.token!, { 'If-None-Match': etag, 'Cache-Control': 'no-cache' })).status).toBe(304);
  expect((await proxied.getFile(done.token!, { 'If-Modified-Since': lastModified })).status).toBe(304);
  expect((await proxied.getFile(done.token!, { 'If-None-Match': '"another"' })).status).toBe(200);
});

test('when the token is unknown, the file expired, or it is gone from disk, then the service answers 404 or 410 problems through nginx', async () => {
  const unknown = await proxied.getFile('A'.repeat(43));
  expect(unknown.status).toBe(404);
  expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);

  const expired = await completedDownload('expired');
  expect((await proxied.request('DELETE', `/downloads/${expired.id}`, '/downloads/{download_uuid}')).status).toBe(200);
  const gone = await proxied.getFile(expired.token!);
  expect(gone.status).toBe(410);
  expect(gone.headers['content-type']).toMatch(/^application\/problem\+json/);

  const removed = await completedDownload('removed');
  await rm(path.join(app.config.dataDir, 'files', removed.id));
  const missing = await proxied.getFile(removed.token!);
  expect(missing.status).toBe(410);
  expect(JSON.parse(missing.body.toString('utf8'))).toMatchObject({ status: 410, detail: 'This file is no longer stored.' });
});

test('when a client asks nginx for the internal location itself, then it gets nothing', async () => {
  const done = await completedDownload('internal');
  const res = await fetch(`${nginx.url}/_vds_files/${done.id}`);
  expect(res.status).toBe(404);
  expect(Buffer.from(await res.arrayBuffer()).equals(original)).toBe(false);
});

test('when file links are asked for one after another, then nginx sends them all over one connection to the service', async () => {
  // A relay between nginx and the service that counts the connections nginx opens.
  let connections = 0;
  const service = new URL(app.service.url);
  const relay = createServer((client) => {
    connections++;
    const upstream = connect(Number(service.port), service.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-nginx-'));
  const counted = await startNginx(dir, offloadServer(path.join(app.config.dataDir, 'files')), {
    http: offloadUpstream(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`),
  });
  try {
    const done = await completedDownload('kept');
    const before = connections;
    for (let i = 0; i < 10; i++) expect((await createHttp(counted.url).getFile(done.token!, { Range: 'bytes=0-9' })).status).toBe(206);
    expect(connections - before).toBe(0);
  } finally {
    await counted.stop();
    relay.close();
    await rm(dir, { recursive: true, force: true });
  }
});

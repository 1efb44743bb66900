import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { useService } from './support/harness.ts';
import { downloadToEnd, expectNothingStored } from './support/outcomes.ts';
import { prepareHlsFixtures, type HlsFixture } from './support/streams/hls-fixtures.ts';

// Playlists, manifests and pages are asked for compressed and media bytes never are; whatever a
// server compresses (asked or not, as nginx's gzip_static always does) is decoded, and every bound
// counts the decoded bytes, so a small body that inflates without end is refused, not inflated.

const { app, source } = useService({ maxAttempts: 1 });
let master: HlsFixture;

beforeAll(async () => {
  ({ master } = await prepareHlsFixtures());
}, 120_000);

/** Serves the master fixture: the master playlist gzip-encoded whatever was asked, variant playlists in brotli when asked for it. */
function serveCompressedMaster(prefix: string): string {
  for (const relative of readdirSync(master.dir, { recursive: true, encoding: 'utf8' })) {
    const file = path.join(master.dir, relative);
    if (!statSync(file).isFile()) continue;
    source.route(`${prefix}/${relative.split(path.sep).join('/')}`, async (req, res) => {
      const body = await readFile(file);
      if (!relative.endsWith('.m3u8')) return void res.writeHead(200, { 'content-type': 'video/mp2t', 'content-length': body.length }).end(body);
      const asked = req.headers['accept-encoding'] ?? '';
      const [coding, encoded] = relative === master.playlist ? ['gzip', gzipSync(body)] : asked.includes('br') ? ['br', brotliCompressSync(body)] : ['', body];
      res.writeHead(200, {
        'content-type': 'application/vnd.apple.mpegurl',
        'content-length': encoded.length,
        ...(coding ? { 'content-encoding': coding } : {}),
      });
      res.end(encoded);
    });
  }
  return source.url(`${prefix}/${master.playlist}`);
}

test('when a master playlist comes gzip-encoded unasked and its variants in brotli, then the stream downloads on its first attempt, and only playlists were asked for compressed', async () => {
  const done = await downloadToEnd(app, { url: serveCompressedMaster('/hls-compressed') });
  expect(done).toMatchObject({ status: 'completed', attempts: 1 });

  const asked = source.requests.filter((request) => request.path.startsWith('/hls-compressed/'));
  const playlists = asked.filter((request) => request.path.endsWith('.m3u8'));
  const segments = asked.filter((request) => !request.path.endsWith('.m3u8'));
  expect(playlists.length).toBeGreaterThanOrEqual(2);
  expect(segments.length).toBeGreaterThan(0);
  // The first URL could be anything, media included: it is not asked for compressed.
  expect(playlists.find((request) => request.path.endsWith(`/${master.playlist}`))?.headers['accept-encoding']).toBe('identity');
  for (const variant of playlists.filter((request) => !request.path.endsWith(`/${master.playlist}`))) {
    expect(variant.headers['accept-encoding']).toBe('gzip, br');
  }
  for (const segment of segments) expect(segment.headers['accept-encoding']).toBe('identity');
});

test('when a page is a gzip bomb (80 KB that inflate to 64 MiB), then the download fails as unsupported_source at the page limit, without inflating it', async () => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '), { level: 9 });
  expect(bomb.length).toBeLessThan(100_000);
  const url = source.content('/bomb.html', bomb, { contentType: 'text/html', headers: { 'content-encoding': 'gzip' } });
  const before = process.memoryUsage().rss;
  const done = await downloadToEnd(app, { url });
  expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source' } });
  expect(done.error?.message).toMatch(/larger than \d+ bytes/);
  // The service runs in this process: had it inflated the page, its memory would show 64 MiB more.
  expect(process.memoryUsage().rss - before).toBeLessThan(48 * 1024 * 1024);
  await expectNothingStored(app, done.id);
});

test('when a playlist says it is gzip but its bytes are not, then the download fails as unsupported_source saying it could not be decoded', async () => {
  const url = source.content('/corrupt.m3u8', Buffer.from('#EXTM3U\nnot gzip at all\n'), { headers: { 'content-encoding': 'gzip' } });
  const done = await downloadToEnd(app, { url });
  expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source' } });
  expect(done.error?.message).toMatch(/could not be decoded/);
});

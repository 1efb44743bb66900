import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../../src/core/errors.ts';
import { SourceHttp } from '../../src/net/guarded-client.ts';
import { listEntries, type Listing } from '../../src/sources/listing/index.ts';
import { DocumentSandbox } from '../../src/sources/sandbox/document-sandbox.ts';
import { worstLoopStall } from '../support/loop-stalls.ts';
import { testSourceHttp } from '../support/source-http.ts';

// Pages, and the answers that are not feeds, listed without yt-dlp by a server of this file on
// 127.0.0.1: a page's media elements as entries, the URL itself as the one entry of a file, a
// stream or a page of one video, and the failures a download's fetch would have.

let origin = '';
const sandbox = new DocumentSandbox();
const pages = new Map<string, { body: string | Buffer; type: string }>();
const server = http.createServer((request, response) => {
  const path = new URL(request.url ?? '/', 'http://x').pathname;
  const page = pages.get(path);
  if (page) return void response.writeHead(200, { 'content-type': page.type }).end(page.body);
  if (path === '/moved') return void response.writeHead(302, { location: '/two.html' }).end();
  response.writeHead(404, { 'content-type': 'text/html' }).end('<html><title>Not found</title><video src="/nope.mp4"></video></html>');
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await sandbox.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function serve(path: string, body: string | Buffer, type = 'text/html; charset=utf-8'): string {
  pages.set(path, { body, type });
  return `${origin}${path}`;
}

function list(url: string, limit = 100, http: SourceHttp = testSourceHttp()): Promise<Listing> {
  return listEntries({ http, site: null, sandbox, readTimeoutMs: 30_000 }, url, { limit, signal: new AbortController().signal });
}

async function failure(promise: Promise<unknown>): Promise<DownloadError> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DownloadError);
  return error as DownloadError;
}

const page = (title: string, body: string, head = '') => `<!doctype html><html><head><title>${title}</title>${head}</head><body>${body}</body></html>`;

describe('a page of several media elements', () => {
  test("when a page holds videos and audio, then each element is one entry, its src or first usable <source>, resolved against the page's base, titled by title or aria-label", async () => {
    const url = serve(
      '/show/index.html',
      page(
        '  My\n show  ',
        [
          '<video src="one.mp4" title="First"></video>',
          '<video aria-label="Second"><source src="blob:http://x/1"><source src="javascript:alert(1)"><source src="two.webm" type="video/webm"><source src="two.mp4"></video>',
          '<figure><audio controls><div><source src="/audio/three.mp3"></div></audio></figure>',
          '<video title="" aria-label="Fourth" src="https://cdn.example/four.m3u8#t=3"></video>',
          '<video title="none usable"><source src="data:video/mp4;base64,AAAA"></video>',
          '<video src="one.mp4" title="the first again"></video>',
        ].join(''),
        '<base href="/media/">',
      ),
    );
    expect(await list(url)).toEqual({
      title: 'My show',
      extractor: 'page',
      truncated: false,
      entries: [
        { id: null, url: `${origin}/media/one.mp4`, title: 'First', durationSeconds: null, extractor: null, upcoming: false },
        { id: null, url: `${origin}/media/two.webm`, title: 'Second', durationSeconds: null, extractor: null, upcoming: false },
        { id: null, url: `${origin}/audio/three.mp3`, title: null, durationSeconds: null, extractor: null, upcoming: false },
        { id: null, url: 'https://cdn.example/four.m3u8', title: 'Fourth', durationSeconds: null, extractor: null, upcoming: false },
      ],
    });
  });

  test('when a page holds more media elements than the limit, then the first ones are listed, truncated', async () => {
    const url = serve('/three.html', page('Three', '<video src=a.mp4></video><video src=b.mp4></video><audio src=c.mp3></audio>'));
    expect(await list(url, 2)).toMatchObject({ truncated: true, entries: [{ url: `${origin}/a.mp4` }, { url: `${origin}/b.mp4` }] });
    expect(await list(url, 3)).toMatchObject({ truncated: false, entries: { length: 3 } });
  });

  test('when titles are hostile (controls, bidi overrides, a megabyte), then entries and the listing carry one clean line of at most 500 characters', async () => {
    const url = serve(
      '/dirty.html',
      page(
        `Title&#x202E;\u0007 ${'x'.repeat(300_000)}`,
        `<video src=a.mp4 title="a&#10;b\u0000c"></video><video src=b.mp4 aria-label="${'y'.repeat(1_000_000)}"></video>`,
      ),
    );
    const listing = await list(url);
    expect(listing.title).toBe(`Title ${'x'.repeat(494)}`);
    expect(listing.entries.map((entry) => entry.title)).toEqual(['a bc', 'y'.repeat(500)]);
  });

  test('when a page is reached through a redirect, then its URLs are resolved against where it came from', async () => {
    serve('/two.html', page('Two', '<video src="a.mp4"></video><video src="sub/b.mp4"></video>'));
    expect((await list(`${origin}/moved`)).entries.map((entry) => entry.url)).toEqual([`${origin}/a.mp4`, `${origin}/sub/b.mp4`]);
  });
});

describe('pages written to be costly', () => {
  // Bounds against work that grows out of proportion (a quadratic walk takes minutes here), far
  // above what a loaded CI machine needs (1.5 to 3 s): a time, not a speed target.
  const BUDGET_MS = 10_000;

  test('when a page is 8 MiB of distinct videos, then the first ones up to one past the limit are listed, truncated, within the budget', async () => {
    const videos = Array.from({ length: 340_000 }, (_unused, index) => `<video src=/${index}.mp4>`).join('');
    expect(videos.length).toBeGreaterThan(7 * 1024 * 1024);
    const url = serve('/many.html', videos);
    const started = performance.now();
    const listing = await list(url, 500);
    expect(performance.now() - started).toBeLessThan(BUDGET_MS);
    expect(listing.truncated).toBe(true);
    expect(listing.entries.map((entry) => entry.url)).toEqual(Array.from({ length: 500 }, (_unused, index) => `${origin}/${index}.mp4`));
  });

  test("when a page is 8 MiB of nested media elements with long attributes, then it is parsed off the main thread: the event loop's worst stall stays far under what parsing it costs", async () => {
    // Elements nested ever deeper, each with attributes to read: what costs the parser most per byte.
    const element = (index: number) => `<video src=/${index}.mp4 title="${'t'.repeat(40)}" aria-label="${'a'.repeat(40)}"><div class=x data-n=${index}>`;
    const nested = Array.from({ length: 55_000 }, (_unused, index) => element(index)).join('');
    expect(nested.length).toBeGreaterThan(7 * 1024 * 1024);
    const url = serve('/nested.html', nested);
    const probe = worstLoopStall();
    const listing = await list(url, 500);
    // The probe's timer turns once more, to see a stall that ended just as the listing did.
    await sleep(20);
    const worstMs = probe.stop();
    expect(listing).toMatchObject({ truncated: true, entries: { length: 500 } });
    expect(listing.entries[499]).toEqual({
      id: null,
      url: `${origin}/499.mp4`,
      title: 't'.repeat(40),
      durationSeconds: null,
      extractor: null,
      upcoming: false,
    });
    // Parsing this page on the main thread stalled it for about 380 ms of its own CPU time; in the
    // sandbox, a thread started for it or not, the worst was under 20 ms.
    expect(worstMs).toBeLessThan(100);
  });

  test('when a video holds 8 MiB of unusable <source>s before a usable one, then it has no URL, and the next video is still its own entry', async () => {
    const junk = '<source src="data:,">'.repeat(380_000);
    const url = serve('/junk.html', `<video>${junk}<source src="/late.mp4"></video><video src="/b.mp4"></video><video src="/c.mp4"></video>`);
    const started = performance.now();
    expect((await list(url)).entries.map((entry) => entry.url)).toEqual([`${origin}/b.mp4`, `${origin}/c.mp4`]);
    expect(performance.now() - started).toBeLessThan(BUDGET_MS);
  });
});

describe('one entry: the URL itself', () => {
  test('when the URL is a media file, an HLS playlist or a DASH manifest, then it is the one entry, by how it was told', async () => {
    // An MP4's first box is all its bytes need to show.
    const mp4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom\0\0\x02\0isomiso2', 'latin1'), Buffer.alloc(64)]);
    const cases = [
      [serve('/clip.bin', mp4, 'application/octet-stream'), 'direct'],
      [serve('/live.m3u8', '#EXTM3U\n#EXTINF:4,\nseg0.ts\n', 'application/vnd.apple.mpegurl'), 'hls'],
      [serve('/stream.mpd', '<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011"></MPD>', 'application/dash+xml'), 'dash'],
    ] as const;
    for (const [url, extractor] of cases) {
      expect(await list(url)).toEqual({
        title: null,
        extractor,
        truncated: false,
        entries: [{ id: null, url, title: null, durationSeconds: null, extractor: null, upcoming: false }],
      });
    }
  });

  test('when a page holds one video, or the same one twice, and there is no yt-dlp, then the page itself is the one entry, with its title', async () => {
    for (const [path, body] of [
      ['/one.html', '<video src="a.mp4"></video>'],
      ['/same-twice.html', '<video src="a.mp4"></video><video><source src="/a.mp4"></video>'],
    ] as const) {
      const url = serve(path, page('One clip', body, '<meta property="og:title" content="The clip">'));
      expect(await list(url)).toEqual({
        title: 'The clip',
        extractor: 'page',
        truncated: false,
        entries: [{ id: null, url, title: 'The clip', durationSeconds: null, extractor: null, upcoming: false }],
      });
    }
  });

  test('when a page has no video element but a stream URL the page reader finds, and there is no yt-dlp, then the page is the one entry', async () => {
    const url = serve('/player.html', page('Player', '<script>player.load("https://cdn.example/master.m3u8")</script>'));
    expect(await list(url)).toMatchObject({ extractor: 'page', entries: [{ url, title: 'Player' }] });
  });
});

describe('nothing listed', () => {
  test('when a page has no media and there is no yt-dlp, then it is unsupported_source, saying yt-dlp would read sites', async () => {
    const url = serve('/nothing.html', page('Nothing', '<p>words</p>'));
    const error = await failure(list(url));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toBe(
      `No video or audio was found at ${url}. If it is a video site's page, installing yt-dlp on the server enables extraction from sites.`,
    );
  });

  test('when the answer is neither media nor a page nor a feed (JSON, an image), and there is no yt-dlp, then it is unsupported_source', async () => {
    const json = serve('/data.json', '{"videos": ["a.mp4"]}', 'application/json');
    expect((await failure(list(json))).code).toBe('unsupported_source');
    const png = serve('/pic.png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), 'image/png');
    expect((await failure(list(png))).code).toBe('unsupported_source');
  });

  test('when the URL answers 404, then it is source_http_error, not retryable, whatever the error page holds', async () => {
    const error = await failure(list(`${origin}/missing.html`));
    expect(error).toMatchObject({ code: 'source_http_error', retryable: false, message: 'The source answered HTTP 404.' });
  });

  test('when the URL is on a loopback address and private addresses are not allowed, then it is blocked_address, before any request', async () => {
    const strict = new SourceHttp({ allowPrivateAddresses: false, connectTimeoutMs: 5_000, idleTimeoutMs: 5_000, minBytesPerSecond: 0 });
    expect((await failure(list(`${origin}/two.html`, 10, strict))).code).toBe('blocked_address');
  });

  test('when the URL is not http(s), or nothing listens there, then it fails as a download would', async () => {
    expect((await failure(list('ftp://127.0.0.1/a.mp4'))).code).toBe('unsupported_source');
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await failure(list(`http://127.0.0.1:${port}/a.html`))).code).toBe('source_unreachable');
  });
});

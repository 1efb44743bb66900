import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DownloadError } from '../../src/core/errors.ts';
import { MAX_FEED_BYTES } from '../../src/sources/document-limits.ts';
import { durationOf } from '../../src/sources/listing/feed-duration.ts';
import { listEntries, type Listing } from '../../src/sources/listing/index.ts';
import { DocumentSandbox } from '../../src/sources/sandbox/document-sandbox.ts';
import { worstLoopStall } from '../support/loop-stalls.ts';
import { testSourceHttp } from '../support/source-http.ts';

// Feeds listed as a collection's entries, served by a server of this file on 127.0.0.1: RSS 2.0 and
// Atom, what each item's entry takes from it, and feeds that are an attacker's (endless, huge,
// entity-laden, without media). yt-dlp is off here: what is listed is the service's own reading.

type Route = (request: http.IncomingMessage, response: http.ServerResponse) => void;
const routes = new Map<string, Route>();
const requested: string[] = [];
let origin = '';
const server = http.createServer((request, response) => {
  requested.push(request.url ?? '');
  const route = routes.get(new URL(request.url ?? '/', 'http://x').pathname);
  if (route) route(request, response);
  else response.writeHead(404).end();
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

const sourceHttp = testSourceHttp();
// Feeds are read on this thread; a page this file serves is parsed in the sandbox.
const sandbox = new DocumentSandbox();

/** Serves `body` at `path` with `type`; its URL. */
function serve(path: string, body: string | Buffer, type = 'application/rss+xml'): string {
  routes.set(path, (_request, response) => response.writeHead(200, { 'content-type': type }).end(body));
  return `${origin}${path}`;
}

function list(url: string, limit = 100, signal = new AbortController().signal): Promise<Listing> {
  return listEntries({ http: sourceHttp, site: null, sandbox, readTimeoutMs: 30_000 }, url, { limit, signal });
}

async function failure(promise: Promise<unknown>): Promise<DownloadError> {
  const error = await promise.then(
    () => new Error('expected a failure'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DownloadError);
  return error as DownloadError;
}

const rss = (items: string, head = '<title>A podcast</title>') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:media="http://search.yahoo.com/mrss/"><channel>${head}${items}</channel></rss>`;
const item = (inner: string) => `<item>${inner}</item>`;

describe('RSS 2.0', () => {
  test('when a podcast feed is listed, then each item with media is one entry, in order, with its guid, title, duration and resolved URL', async () => {
    const url = serve(
      '/podcast/feed.xml',
      rss(
        [
          item(
            '<title>Episode 1</title><guid isPermaLink="false">ep-1</guid><itunes:duration>1830</itunes:duration><enclosure url="ep1.mp3" type="audio/mpeg" length="1"/>',
          ),
          item(
            '<title><![CDATA[Episode <2> & more]]></title><guid>ep-2</guid><itunes:duration>05:07</itunes:duration><enclosure url="/media/ep2.mp4" type="video/mp4"/>',
          ),
          item('<title>A post with a picture only</title><guid>post</guid><enclosure url="pic.jpg" type="image/jpeg"/>'),
          item('<title>Text only</title><guid>text</guid><description>no media</description>'),
          item(
            '<title>Media RSS</title><guid>ep-3</guid><media:content url="http://cdn.example/ep3.m4a" medium="image"/><media:group><media:content url="https://cdn.example/ep3.mp4" duration="61"/></media:group>',
          ),
          item('<title>Long one</title><guid>ep-4</guid><itunes:duration>1:02:03</itunes:duration><enclosure url="https://cdn.example/ep4.mp3#t=1"/>'),
        ].join(''),
      ),
    );
    expect(await list(url)).toEqual({
      title: 'A podcast',
      extractor: 'feed',
      truncated: false,
      entries: [
        { id: 'ep-1', url: `${origin}/podcast/ep1.mp3`, title: 'Episode 1', durationSeconds: 1830, extractor: null, upcoming: false },
        { id: 'ep-2', url: `${origin}/media/ep2.mp4`, title: 'Episode <2> & more', durationSeconds: 307, extractor: null, upcoming: false },
        { id: 'ep-3', url: 'https://cdn.example/ep3.mp4', title: 'Media RSS', durationSeconds: 61, extractor: null, upcoming: false },
        { id: 'ep-4', url: 'https://cdn.example/ep4.mp3', title: 'Long one', durationSeconds: 3723, extractor: null, upcoming: false },
      ],
    });
  });

  test('when an item has an enclosure and media:content, then the enclosure is its URL and media:content only lends its duration', async () => {
    const url = serve(
      '/both.xml',
      rss(item('<title>x</title><media:content url="http://a.example/m.mp4" duration="12"/><enclosure url="http://a.example/e.mp4"/>')),
    );
    expect((await list(url)).entries).toEqual([{ id: null, url: 'http://a.example/e.mp4', title: 'x', durationSeconds: 12, extractor: null, upcoming: false }]);
  });

  test('when items repeat a URL, or name one that is not http(s), too long, or huge, then each URL is listed once and the others are skipped', async () => {
    const long = `http://a.example/${'x'.repeat(2048)}`;
    const fits = `http://a.example/${'y'.repeat(2048 - 'http://a.example/'.length)}`;
    const url = serve(
      '/hostile-urls.xml',
      rss(
        [
          item('<guid>1</guid><enclosure url="http://a.example/1.mp4"/>'),
          item('<guid>again</guid><enclosure url="http://a.example/1.mp4#other-fragment"/>'),
          item('<guid>js</guid><enclosure url="javascript:alert(1)"/>'),
          item('<guid>ftp</guid><enclosure url="ftp://a.example/2.mp4"/>'),
          item(`<guid>long</guid><enclosure url="${long}"/>`),
          item(`<guid>huge</guid><enclosure url="http://a.example/${'z'.repeat(1024 * 1024)}"/>`),
          item(`<guid>fits</guid><enclosure url="${fits}"/>`),
          item('<guid>2</guid><enclosure url="  http://a.example/2.mp4  "/>'),
        ].join(''),
      ),
    );
    const listing = await list(url);
    expect(listing.entries.map((entry) => [entry.id, entry.url])).toEqual([
      ['1', 'http://a.example/1.mp4'],
      ['fits', fits],
      ['2', 'http://a.example/2.mp4'],
    ]);
    expect(fits).toHaveLength(2048);
  });

  test('when titles and guids hold control characters, bidi overrides, line breaks or a megabyte, then they come out as one clean line of at most 500 characters', async () => {
    const url = serve(
      '/dirty.xml',
      rss(
        [
          item('<title>Bad\u0007 &#x202E;name\n\tnext line\u001b[31m</title><guid>id\u0000\u0085x</guid><enclosure url="http://a.example/1.mp4"/>'),
          item(`<title>${'t'.repeat(1024 * 1024)}</title><guid>${'g'.repeat(2000)}</guid><enclosure url="http://a.example/2.mp4"/>`),
          item('<title>   </title><enclosure url="http://a.example/3.mp4"/>'),
        ].join(''),
        '<title>Feed\u0001 title</title>',
      ),
    );
    const listing = await list(url);
    expect(listing.title).toBe('Feed title');
    expect(listing.entries[0]).toMatchObject({ id: 'id x', title: 'Bad name next line[31m' });
    expect(listing.entries[1]).toMatchObject({ id: 'g'.repeat(500), title: 't'.repeat(500) });
    expect(listing.entries[2]).toMatchObject({ title: null, id: null });
  });

  test('when the feed has a DTD with entities, internal, external and nested, then none is expanded, nothing is fetched, and the items still list', async () => {
    const laughs = Array.from({ length: 10 }, (_unused, level) => `<!ENTITY lol${level + 1} "${`&lol${level};`.repeat(10)}">`).join('');
    const url = serve(
      '/entities.xml',
      `<?xml version="1.0"?>\n<!DOCTYPE rss [<!ENTITY lol0 "lol">${laughs}<!ENTITY xxe SYSTEM "${origin}/secret"><!ENTITY % remote SYSTEM "${origin}/remote.dtd">%remote;]>` +
        `<rss version="2.0"><channel><title>&lol10;</title>${item('<title>&xxe;&amp;&lt;ok&gt;</title><guid>&lol10;</guid><enclosure url="http://a.example/&xxe;.mp4"/>')}</channel></rss>`,
      'text/xml',
    );
    const listing = await list(url);
    expect(listing).toEqual({
      title: '&lol10;',
      extractor: 'feed',
      truncated: false,
      entries: [{ id: '&lol10;', url: 'http://a.example/&xxe;.mp4', title: '&xxe;&<ok>', durationSeconds: null, extractor: null, upcoming: false }],
    });
    expect(requested.filter((path) => path === '/secret' || path === '/remote.dtd')).toEqual([]);
  });

  test('when a feed is recognised by its root alone (served as text/plain) or by a DOCTYPE before it, then it is read as a feed', async () => {
    const plain = serve('/plain.txt', rss(item('<enclosure url="http://a.example/1.mp4"/>')), 'text/plain');
    expect(await list(plain)).toMatchObject({ extractor: 'feed', entries: [{ url: 'http://a.example/1.mp4' }] });
    const declared = serve(
      '/doctype.xml',
      `<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">${rss(item('<enclosure url="http://a.example/2.mp4"/>')).replace(/^<\?xml[^>]*>\n/, '')}`,
      'application/octet-stream',
    );
    expect(await list(declared)).toMatchObject({ extractor: 'feed', entries: [{ url: 'http://a.example/2.mp4' }] });
  });

  test('when the feed has no item with media, then it is unsupported_source, saying so', async () => {
    const url = serve('/empty.xml', rss(item('<title>words</title>') + item('<enclosure url="p.png" type="image/png"/>')));
    const error = await failure(list(url));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toBe(`The feed at ${url} has no item with a video or audio file.`);
  });

  test('when the feed holds exactly the limit, then it is not truncated; one more, and it is', async () => {
    const items = (count: number) => Array.from({ length: count }, (_unused, n) => item(`<enclosure url="http://a.example/${n}.mp4"/>`)).join('');
    expect(await list(serve('/three.xml', rss(items(3))), 3)).toMatchObject({ truncated: false, entries: { length: 3 } });
    const four = await list(serve('/four.xml', rss(items(4))), 3);
    expect(four).toMatchObject({ truncated: true, entries: { length: 3 } });
    expect(four.entries.map((entry) => entry.url)).toEqual(['http://a.example/0.mp4', 'http://a.example/1.mp4', 'http://a.example/2.mp4']);
  });
});

describe('Atom', () => {
  test('when an Atom feed is listed, then each entry with an enclosure link is one entry, with its id and title, and the feed title', async () => {
    const url = serve(
      '/videos/atom.xml',
      `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:m="http://search.yahoo.com/mrss/">
  <title type="text">Atom videos</title><id>urn:feed</id>
  <link rel="self" href="http://a.example/atom.xml"/>
  <entry><title>First</title><id>urn:uuid:1</id><link rel="alternate" href="http://a.example/post1"/><link rel="enclosure" type="video/mp4" href="one.mp4"/></entry>
  <entry><title>No media</title><id>urn:uuid:2</id><link href="http://a.example/post2"/></entry>
  <entry><id>urn:uuid:3</id><title>Media RSS, another prefix</title><m:content url="three.webm" duration="9.5"/></entry>
  <entry><title>Picture</title><id>urn:uuid:4</id><link rel="enclosure" type="image/png" href="four.png"/></entry>
</feed>`,
      'application/atom+xml',
    );
    expect(await list(url)).toEqual({
      title: 'Atom videos',
      extractor: 'feed',
      truncated: false,
      entries: [
        { id: 'urn:uuid:1', url: `${origin}/videos/one.mp4`, title: 'First', durationSeconds: null, extractor: null, upcoming: false },
        { id: 'urn:uuid:3', url: `${origin}/videos/three.webm`, title: 'Media RSS, another prefix', durationSeconds: 9.5, extractor: null, upcoming: false },
      ],
    });
  });
});

describe('a feed that does not end', () => {
  test('when a feed of 100,000 items is listed with limit 3, then 3 entries come back, truncated, and the connection is closed after a small part of it', async () => {
    const ITEMS = 100_000;
    const seen = { sent: 0, items: 0, total: 0, closedEarly: false };
    routes.set('/huge.xml', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/rss+xml' });
      const head = '<?xml version="1.0"?><rss version="2.0"><channel><title>Huge</title>';
      const itemText = (n: number) =>
        `<item><title>Item ${n}</title><guid>${n}</guid><description>${'words '.repeat(40)}</description><enclosure url="http://a.example/${n}.mp4" type="video/mp4"/></item>\n`;
      seen.total = Buffer.byteLength(head) + Array.from({ length: ITEMS }, (_unused, n) => Buffer.byteLength(itemText(n))).reduce((a, b) => a + b, 0);
      response.on('close', () => (seen.closedEarly = !response.writableFinished));
      let n = 0;
      const more = () => {
        // 100 items at a time, as a server generating the feed would, waiting for the socket to drain.
        while (n < ITEMS) {
          const piece = Array.from({ length: Math.min(100, ITEMS - n) }, (_unused, k) => itemText(n + k)).join('');
          n += Math.min(100, ITEMS - n);
          seen.items = n;
          seen.sent += Buffer.byteLength(piece);
          if (response.destroyed) return;
          if (!response.write(piece)) return void response.once('drain', more);
        }
        response.end('</channel></rss>');
      };
      seen.sent += Buffer.byteLength(head);
      response.write(head);
      more();
    });
    const started = performance.now();
    const listing = await list(`${origin}/huge.xml`, 3);
    expect(listing).toEqual({
      title: 'Huge',
      extractor: 'feed',
      truncated: true,
      entries: [0, 1, 2].map((n) => ({
        id: String(n),
        url: `http://a.example/${n}.mp4`,
        title: `Item ${n}`,
        durationSeconds: null,
        extractor: null,
        upcoming: false,
      })),
    });
    await waitUntil(() => seen.closedEarly);
    // What the socket buffers and the client's read-ahead (1 MiB) take in before the listing lets go, not the feed.
    expect(seen.sent).toBeLessThan(seen.total / 4);
    expect(seen.items).toBeLessThan(ITEMS / 4);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('when a feed is larger than the feed limit and no item within it has media, then it is unsupported_source, and no more than that is read', async () => {
    let sent = 0;
    routes.set('/no-media-forever.xml', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/rss+xml' });
      const piece = item('<title>nothing to see</title>'.repeat(100)).repeat(10);
      response.write('<rss><channel><title>Endless</title>');
      const more = () => {
        while (!response.destroyed) {
          sent += piece.length;
          if (!response.write(piece)) return void response.once('drain', more);
        }
      };
      more();
    });
    const error = await failure(list(`${origin}/no-media-forever.xml`));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toBe(`The feed at ${origin}/no-media-forever.xml has no item with a video or audio file in its first ${MAX_FEED_BYTES} bytes.`);
    expect(sent).toBeLessThan(MAX_FEED_BYTES + 16 * 1024 * 1024);
  });

  test.each([
    ['before its first KiB has come', ''],
    ['while its items are read', `<description>${'padding '.repeat(200)}</description>`],
  ])('when the listing is cancelled %s, then it rejects with the cancel, and the connection goes', async (_when, padding) => {
    let closed = false;
    const path = `/slow-${padding.length}.xml`;
    routes.set(path, (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/rss+xml' });
      response.write(rss('', `<title>Slow</title>${padding}`).replace('</channel></rss>', item('<enclosure url="http://a.example/1.mp4"/>')));
      response.on('close', () => (closed = true));
    });
    const controller = new AbortController();
    const listing = list(`${origin}${path}`, 10, controller.signal);
    setTimeout(() => controller.abort(new Error('cancelled by the test')), 200);
    await expect(listing).rejects.toThrow('cancelled by the test');
    await waitUntil(() => closed);
  });
});

describe('a feed written to be costly', () => {
  test('when a feed nests elements 20,000 deep after its first item, then the reading stops at the depth limit: the item is listed, truncated, and no turn of the event loop takes long', async () => {
    const deep = `${'<div>'.repeat(20_000)}${item('<enclosure url="http://a.example/deep.mp4"/>')}${'</div>'.repeat(20_000)}`;
    const url = serve('/deep.xml', rss(`${item('<enclosure url="http://a.example/1.mp4"/>')}${deep}${item('<enclosure url="http://a.example/2.mp4"/>')}`));
    const stalls = worstLoopStall();
    const listing = await list(url);
    expect(stalls.stop()).toBeLessThan(500);
    expect(listing).toEqual({
      title: 'A podcast',
      extractor: 'feed',
      truncated: true,
      entries: [{ id: null, url: 'http://a.example/1.mp4', title: null, durationSeconds: null, extractor: null, upcoming: false }],
    });

    const nothing = serve('/deep-only.xml', rss(deep));
    const error = await failure(list(nothing));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toBe(`The feed at ${nothing} has no item with a video or audio file before its elements nest 32 deep.`);
  });

  test('when a feed trickles items without media for longer than the reading may take, then it is source_timeout, retryable, and its connection goes', async () => {
    let closed = false;
    routes.set('/trickle.xml', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/rss+xml' });
      response.write('<rss><channel><title>Trickle</title>');
      // Steady enough for any speed floor: an item every 50 ms, none with media.
      const timer = setInterval(() => response.write(item(`<title>${'n'.repeat(2000)}</title>`)), 50);
      response.on('close', () => {
        clearInterval(timer);
        closed = true;
      });
    });
    const started = performance.now();
    const error = await failure(
      listEntries({ http: sourceHttp, site: null, sandbox, readTimeoutMs: 1000 }, `${origin}/trickle.xml`, { limit: 10, signal: new AbortController().signal }),
    );
    expect(error).toMatchObject({ code: 'source_timeout', retryable: true });
    expect(error.message).toBe(`Reading ${origin}/trickle.xml took longer than 1 s.`);
    expect(performance.now() - started).toBeLessThan(5000);
    await waitUntil(() => closed);
  });
});

describe('durationOf', () => {
  test.each([
    ['1830', 1830],
    [' 1830.5 ', 1830.5],
    ['05:07', 307],
    ['5:07', 307],
    ['1:02:03', 3723],
    ['100:00:00', 360_000],
    ['0', 0],
  ])('when the duration is %p, then it is %p seconds', (text, seconds) => {
    expect(durationOf(text)).toBe(seconds);
  });

  test.each(['', 'abc', '-5', '1:60', '1:61:00', '1:2:3:4', '1e3', 'NaN', 'Infinity', '12:'])('when the duration is %p, then there is none', (text) => {
    expect(durationOf(text)).toBeNull();
  });

  test('when the duration is a hundred digits or ten thousand fields, then there is none, at once', () => {
    const started = performance.now();
    expect(durationOf('9'.repeat(100))).toBeNull();
    expect(durationOf(`${'1:'.repeat(10_000)}1`)).toBeNull();
    expect(performance.now() - started).toBeLessThan(50);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let waited = 0; waited < 5000; waited += 10) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the condition never held');
}

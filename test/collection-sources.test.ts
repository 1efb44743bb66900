import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Download } from './support/api.ts';
import { childrenOf, createCollection, waitForCollection, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';
import type { FixtureServer } from './support/fixture-server.ts';
import type { TestService } from './support/api.ts';

// What a collection is made of, through the public API, from sources the test serves: an RSS feed
// and a page of two videos (the service's own readers, with yt-dlp off), a JW Player playlist page
// (yt-dlp's flat playlist, through the confined proxy), a preview and its picks, and a feed whose
// entries point at private addresses.

type Preview = {
  title: string | null;
  extractor: string | null;
  truncated: boolean;
  entries: { index: number; id: string | null; url: string; title: string | null }[];
};

const rss = (title: string, items: { guid: string; title: string; url: string }[]) =>
  `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>${title}</title>${items
    .map((item) => `<item><title>${item.title}</title><guid>${item.guid}</guid><enclosure url="${item.url}" type="video/mp4" length="1"/></item>`)
    .join('')}</channel></rss>`;
const page = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;

/** Resolves once `res` takes more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

async function expectAllCompleted(app: TestService, id: string, urls: string[]): Promise<Download[]> {
  const done = await waitForCollection(app.http, id, ['completed'], 60_000);
  expect(done.counts).toMatchObject({ total: urls.length, completed: urls.length });
  const children = await childrenOf(app.http, id);
  expect(children.map((child) => child.url)).toEqual(urls);
  const expected = await sha256File(mediaPath('clip.mp4'));
  for (const child of children) expect(child.file?.sha256).toBe(expected);
  return children;
}

function clips(source: FixtureServer, prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => source.file(`${prefix}/${i + 1}.mp4`, mediaPath('clip.mp4')));
}

describe('with yt-dlp off', () => {
  const { app, source } = useService({ ytdlp: 'off', allowPrivateAddresses: ['127.0.0.1'] });

  test("when a feed is posted, then each item's enclosure becomes a child in the feed's order and the collection takes the feed's title", async () => {
    const urls = clips(source, '/feed', 3);
    const feed = source.content(
      '/feed.rss',
      rss(
        'Weekly clips',
        urls.map((url, i) => ({ guid: `ep-${i + 1}`, title: `Episode ${i + 1}`, url })),
      ),
      {
        contentType: 'application/rss+xml',
      },
    );
    const created = await createCollection(app.http, { url: feed });
    expect(created.status).toBe(202);
    const collection = created.body as Collection;
    await expectAllCompleted(app, collection.id, urls);
    const done = await waitForCollection(app.http, collection.id, ['completed']);
    expect(done).toMatchObject({ name: 'Weekly clips', extractor: 'feed', kind: 'playlist', truncated: false });
  });

  test('when a page of two videos is posted, then each video becomes a child', async () => {
    const urls = clips(source, '/page', 2);
    const url = source.content('/two.html', page('Two clips', urls.map((src) => `<video src="${src}"></video>`).join('')), { contentType: 'text/html' });
    const collection = (await createCollection(app.http, { url })).body as Collection;
    await expectAllCompleted(app, collection.id, urls);
    expect(await waitForCollection(app.http, collection.id, ['completed'])).toMatchObject({ name: 'Two clips', extractor: 'page' });
  });

  test('when a preview is read and chosen entries are posted, then only those become children, at their positions', async () => {
    const urls = clips(source, '/picked', 4);
    const feed = source.content(
      '/picked.rss',
      rss(
        'Four',
        urls.map((url, i) => ({ guid: `g${i}`, title: `Clip ${i + 1}`, url })),
      ),
      { contentType: 'application/rss+xml' },
    );
    const preview = await app.http.request('POST', '/collections/preview', '/collections/preview', { body: { url: feed, limit: 3 } });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ title: 'Four', extractor: 'feed', truncated: true });
    expect((preview.body as Preview).entries.map((entry) => [entry.index, entry.id, entry.url, entry.title])).toEqual([
      [1, 'g0', urls[0], 'Clip 1'],
      [2, 'g1', urls[1], 'Clip 2'],
      [3, 'g2', urls[2], 'Clip 3'],
    ]);
    const collection = (await createCollection(app.http, { url: feed, entries: [1, 3] })).body as Collection;
    const children = await expectAllCompleted(app, collection.id, [urls[0]!, urls[2]!]);
    expect(children.map((child) => child.collection?.index)).toEqual([1, 3]);
    expect(source.requestsFor('/picked/2.mp4')).toHaveLength(0);
  });

  test('when a feed holds 100,000 items and a limit of 5 is asked, then 5 children are made, truncated, and most of the feed is never sent', async () => {
    const clip = source.file('/many/clip.mp4', mediaPath('clip.mp4'));
    const item = (i: number) => `<item><title>${i}</title><guid>${i}</guid><enclosure url="${clip}?${i}" type="video/mp4"/></item>`;
    let whole = 0;
    for (let i = 1; i <= 100_000; i++) whole += item(i).length;
    let sent = 0;
    const url = source.route('/many.rss', async (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'Content-Type': 'application/rss+xml' });
      res.write('<?xml version="1.0"?><rss version="2.0"><channel><title>Endless</title>');
      for (let i = 1; i <= 100_000 && !res.destroyed; i++) {
        sent += item(i).length;
        if (!res.write(item(i))) await drained(res);
      }
      res.end('</channel></rss>');
    });
    const collection = (await createCollection(app.http, { url, limit: 5 })).body as Collection;
    const done = await waitForCollection(app.http, collection.id, ['completed'], 60_000);
    expect(done).toMatchObject({ truncated: true, counts: { total: 5, completed: 5 } });
    // Reading stopped after the sixth item: what was sent is what socket buffers and the read-ahead hold.
    expect(sent).toBeLessThan(whole / 2);
  });

  test('when feed entries point at private addresses, directly or behind a redirect, then those children fail blocked_address without a request to them, and the rest complete', async () => {
    const [good] = clips(source, '/mixed', 1);
    const hidden = source.redirect('/mixed/hidden.mp4', 'http://169.254.169.254/latest/meta-data');
    const feed = source.content(
      '/mixed.rss',
      rss('Mixed', [
        { guid: 'a', title: 'Private', url: 'http://10.1.2.3/secret.mp4' },
        { guid: 'b', title: 'Hidden', url: hidden },
        { guid: 'c', title: 'Fine', url: good! },
      ]),
      { contentType: 'application/rss+xml' },
    );
    const collection = (await createCollection(app.http, { url: feed })).body as Collection;
    const done = await waitForCollection(app.http, collection.id, ['completed'], 60_000);
    expect(done.counts).toMatchObject({ total: 3, completed: 1, failed: 2 });
    const children = await childrenOf(app.http, collection.id);
    expect(children.map((child) => [child.status, child.error?.code ?? null])).toEqual([
      ['failed', 'blocked_address'],
      ['failed', 'blocked_address'],
      ['completed', null],
    ]);
    expect(children[0]!.attempts).toBe(0);
  });

  test('when the URL answers 404, then the collection fails with source_http_error and has no children', async () => {
    const collection = (await createCollection(app.http, { url: source.status('/missing.rss', 404) })).body as Collection;
    const failed = await waitForCollection(app.http, collection.id, ['failed']);
    expect(failed.error).toMatchObject({ code: 'source_http_error' });
    expect(failed.counts.total).toBe(0);
    expect(failed.finished_at).not.toBeNull();
  });
});

describe('with yt-dlp', () => {
  const { app, source } = useService({ ytdlp: 'on', allowPrivateAddresses: ['127.0.0.1'] });

  test("when a playlist page that only yt-dlp reads is posted, then its playlist's entries become children", async () => {
    const urls = clips(source, '/jw', 3);
    const playlist = urls.map((file, i) => `{"file": "${file}", "title": "Clip ${i + 1}"}`).join(', ');
    const url = source.content(
      '/jw.html',
      page('A playlist', `<div id="player"></div><script>jwplayer("player").setup({"playlist": [${playlist}]});</script>`),
      {
        contentType: 'text/html',
      },
    );
    const collection = (await createCollection(app.http, { url })).body as Collection;
    await expectAllCompleted(app, collection.id, urls);
    const done = await waitForCollection(app.http, collection.id, ['completed']);
    expect(done.extractor).toBe('Generic');
  });
});

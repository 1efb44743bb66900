import { findMediaInPage } from '../src/sources/html/page-media.ts';
import { startFixtureServer } from './support/fixture-server.ts';
import { page } from './support/html-pages.ts';
import { testSourceHttp } from './support/source-http.ts';

// A page fetched over HTTP as the source client fetches it; findMediaInPage on page text alone is
// tested in test/unit/html-media.test.ts.

describe('findMediaInPage over HTTP', () => {
  test('when a page is served by a web server and fetched by the source client, then its media resolve against the final URL', async () => {
    const source = await startFixtureServer();
    try {
      const html = page(
        '<title>Served &amp; parsed</title>',
        '<video><source src="media/clip.mp4" type="video/mp4"></video><script>const hls = "\\/streams\\/master.m3u8";</script>',
      );
      source.content('/videos/watch.html', html);
      const pageUrl = source.redirect('/v/1', '/videos/watch.html');
      const response = await testSourceHttp().get(pageUrl);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      const served = Buffer.concat((await response.body.toArray()) as Buffer[]).toString('utf8');
      const found = findMediaInPage({ html: served, pageUrl: response.url });
      expect(found).toEqual({
        candidates: [source.url('/videos/media/clip.mp4'), source.url('/streams/master.m3u8')],
        title: 'Served & parsed',
        subtitles: [],
      });
    } finally {
      await source.close();
    }
  });
});

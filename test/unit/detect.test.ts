import { detectKind, isFeed } from '../../src/sources/detect.ts';

// detectKind on what a response's type, path and first bytes say; real media heads, which need
// ffmpeg and the generated media, are in test/detect.test.ts.

const HEAD_BYTES = 1024;
const BOM = '\uFEFF';
const text = (value: string) => Buffer.from(value, 'utf8');
const none = Buffer.alloc(0);
const PLAYLIST = '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nsegment0.ts\n';
const MANIFEST = '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">\n<Period/>\n</MPD>\n';
const PAGE = '<!DOCTYPE html>\n<html lang="en"><head><title>A page</title></head><body></body></html>\n';

describe('detectKind', () => {
  describe('HLS', () => {
    test.each(['application/vnd.apple.mpegurl', 'application/x-mpegURL', 'Audio/MpegURL; charset=utf-8', 'audio/x-mpegurl'])(
      'when the type is %p, then it is hls, not direct',
      async (contentType) => {
        await expect(detectKind({ url: 'http://127.0.0.1/stream', contentType, head: none })).resolves.toBe('hls');
      },
    );

    test.each([
      ['application/octet-stream', 'the playlist', PLAYLIST],
      ['text/html', 'the playlist', PLAYLIST],
      ['video/mp2t', 'the playlist', PLAYLIST],
      [null, 'a BOM and the playlist', `${BOM}${PLAYLIST}`],
      ['text/plain', 'a BOM, blank lines and the playlist', `${BOM}\r\n  \n${PLAYLIST}`],
    ])('when the type is %p and the body is %s, then it is hls', async (contentType, _description, body) => {
      await expect(detectKind({ url: 'http://127.0.0.1/stream', contentType, head: text(body) })).resolves.toBe('hls');
    });

    test.each([null, 'text/plain', 'application/octet-stream'])(
      'when the path ends in .m3u8, the type is %p and the body says nothing, then it is hls',
      async (contentType) => {
        await expect(detectKind({ url: 'http://127.0.0.1/a/Master.M3U8?token=1', contentType, head: none })).resolves.toBe('hls');
      },
    );

    test('when .m3u8 is only in the query string, then the path does not make it hls', async () => {
      await expect(detectKind({ url: 'http://127.0.0.1/get?file=a.m3u8', contentType: 'text/plain', head: none })).resolves.toBeNull();
    });
  });

  describe('DASH', () => {
    test('when the type is application/dash+xml with parameters, then it is dash', async () => {
      await expect(detectKind({ url: 'http://127.0.0.1/m', contentType: 'Application/DASH+XML; charset=UTF-8', head: none })).resolves.toBe('dash');
    });

    test.each([
      ['application/xml', MANIFEST],
      ['text/plain', `${BOM}<?xml version="1.0" encoding="UTF-8"?>\n<!-- made by a packager -->\n${MANIFEST}`],
      [null, `<?xml version="1.0"?><!--a--><!-- b -->${MANIFEST}`],
      ['application/octet-stream', `\n\n${MANIFEST}`],
    ])('when the type is %p and the XML root is <MPD>, then it is dash', async (contentType, body) => {
      await expect(detectKind({ url: 'http://127.0.0.1/m', contentType, head: text(body) })).resolves.toBe('dash');
    });

    test('when a long comment hides the root of a .mpd served as XML, then the path makes it dash', async () => {
      const head = text(`<?xml version="1.0"?>\n<!-- ${'x'.repeat(2000)}`).subarray(0, HEAD_BYTES);
      await expect(detectKind({ url: 'http://127.0.0.1/v/manifest.mpd', contentType: 'text/xml', head })).resolves.toBe('dash');
    });

    test('when an XML document has another root, then it is not dash', async () => {
      const head = text('<?xml version="1.0"?>\n<Error><Code>AccessDenied</Code></Error>');
      await expect(detectKind({ url: 'http://127.0.0.1/v/file', contentType: 'application/xml', head })).resolves.toBeNull();
    });
  });

  describe('HTML', () => {
    test.each(['text/html', 'text/html; charset=ISO-8859-1', 'APPLICATION/XHTML+XML'])('when the type is %p, then it is html', async (contentType) => {
      await expect(detectKind({ url: 'http://127.0.0.1/watch', contentType, head: text('<p>hi</p>') })).resolves.toBe('page');
    });

    test.each([
      [null, `${BOM}\n  ${PAGE}`],
      ['application/octet-stream', '<html><body>hi</body></html>'],
      ['video/mp4', '<!doctype HTML><title>Sign in</title>'],
      ['text/plain', '<!-- cached page -->\n<HTML lang="en">'],
      ['application/xml', '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN">\n<html>'],
    ])('when the type is %p and the body starts like a page, then it is html', async (contentType, body) => {
      await expect(detectKind({ url: 'http://127.0.0.1/watch', contentType, head: text(body) })).resolves.toBe('page');
    });

    test('when a text body only mentions <html> later, then it is not html', async () => {
      await expect(detectKind({ url: 'http://127.0.0.1/a.txt', contentType: 'text/plain', head: text('use <html> tags') })).resolves.toBeNull();
    });
  });

  describe('nothing to download', () => {
    test.each([
      ['unknown binary', 'application/octet-stream', Buffer.from([0x13, 0x37, 0x00, 0x42, 0x99, 0xfe, 0x01, 0x02])],
      ['plain text', null, text('just some text')],
      ['an error text', 'text/plain', text('404 not found')],
      ['JSON', 'application/json', text('{"error":"not found"}')],
      ['a PNG', 'video/mp4', Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex')],
      ['a ZIP', 'video/mp4', Buffer.from('504b0304140000000800', 'hex')],
    ])('when the body is %s and the type is %p, then it is null', async (_body, contentType, head) => {
      await expect(detectKind({ url: 'http://127.0.0.1/video.mp4', contentType, head })).resolves.toBeNull();
    });

    test('when the URL cannot be parsed and nothing else is known, then it is null', async () => {
      await expect(detectKind({ url: 'not a url.m3u8', contentType: null, head: none })).resolves.toBeNull();
    });
  });
});

describe('isFeed', () => {
  test.each([
    ['an RSS root', 'text/xml', '<rss version="2.0"><channel>'],
    [
      'an Atom root after a BOM, the XML declaration and a comment',
      null,
      `${BOM}<?xml version="1.0"?>\n<!-- made by hand -->\n<feed xmlns="http://www.w3.org/2005/Atom">`,
    ],
    ['an RSS 1.0 root', 'application/xml', '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'],
    ['a DOCTYPE naming rss, whatever follows', 'text/html', '<!DOCTYPE rss [<!ENTITY a "b">]>'],
    ['nothing yet, declared RSS', 'application/rss+xml; charset=utf-8', ''],
    ['nothing yet, declared Atom', 'Application/Atom+XML', ''],
  ])('when the head is %s, then it is a feed', (_head, contentType, body) => {
    expect(isFeed({ contentType, head: text(body) })).toBe(true);
  });

  test.each([
    ['a page', 'text/html', PAGE],
    ['a DASH manifest', 'application/xml', MANIFEST],
    ['an XML document of another kind', 'application/xml', '<?xml version="1.0"?><feedback>'],
    ['an HLS playlist', 'application/vnd.apple.mpegurl', PLAYLIST],
    ['nothing, of no type', null, ''],
  ])('when the head is %s, then it is no feed', (_head, contentType, body) => {
    expect(isFeed({ contentType, head: text(body) })).toBe(false);
  });
});

import { findAll, textContent } from 'domutils';
import { decodeHTML } from 'entities';
import fc from 'fast-check';
import { parseDocument } from 'htmlparser2';
import { metaTag } from '../../src/sources/html/meta-tags.ts';
import { findMediaInPage } from '../../src/sources/html/page-media.ts';
import { readPageParts } from '../../src/sources/html/page-parts.ts';
import { manifestUrlsInText } from '../../src/sources/html/stream-urls.ts';
import { walkHtml } from '../../src/sources/html/walk-html.ts';
import { page } from '../support/html-pages.ts';

const PAGE_URL = 'https://site.example/watch/episode-1.html';

const candidatesOf = (html: string, pageUrl = PAGE_URL) => findMediaInPage({ html, pageUrl }).candidates;
const titleOf = (html: string) => findMediaInPage({ html, pageUrl: PAGE_URL }).title;
const jsonLd = (data: unknown) => `<script type="application/ld+json">${JSON.stringify(data)}</script>`;

describe('findMediaInPage: video elements', () => {
  test('when a <video> has a relative src, then it is resolved against the page URL', () => {
    expect(candidatesOf(page('', '<video controls src="media/clip.mp4"></video>'))).toEqual(['https://site.example/watch/media/clip.mp4']);
  });

  test('when videos have <source> children, then every src is taken in document order, blob: and data: skipped', () => {
    const body = `
      <video src="/first.mp4"><source src="blob:https://site.example/1234"><source src="second.webm" type="video/webm"></video>
      <div><video poster="p.jpg"><source src="data:video/mp4;base64,AAAA"><source src="//cdn.example/third.mp4"></video></div>`;
    expect(candidatesOf(page('', body))).toEqual(['https://site.example/first.mp4', 'https://site.example/watch/second.webm', 'https://cdn.example/third.mp4']);
  });

  test('when <source> belongs to a <picture> or an <audio>, then it is not a video', () => {
    const body = '<picture><source src="/poster.webp"></picture><audio><source src="/song.mp3"></audio>';
    expect(candidatesOf(page('', body))).toEqual([]);
  });

  test('when the page has a relative <base href>, then URLs resolve against it', () => {
    const html = page('<base href="/static/v2/">', '<video src="clip.mp4"><source src="../alt.mp4"></video>');
    expect(candidatesOf(html)).toEqual(['https://site.example/static/v2/clip.mp4', 'https://site.example/static/alt.mp4']);
  });

  test('when the page has an absolute <base href> on another host, then protocol-relative and relative URLs follow it', () => {
    const html = page('<base href="http://media.example/files/">', '<video src="a.mp4"></video><video src="//cdn.example/b.mp4"></video>');
    expect(candidatesOf(html)).toEqual(['http://media.example/files/a.mp4', 'http://cdn.example/b.mp4']);
  });

  test('when a src carries entities and a fragment, then it is decoded and the fragment dropped', () => {
    expect(candidatesOf(page('', '<video src="/v.mp4?a=1&amp;b=2#t=10"></video>'))).toEqual(['https://site.example/v.mp4?a=1&b=2']);
  });
});

describe('findMediaInPage: declared media', () => {
  test('when og:video, og:video:url and og:video:secure_url are all there, then secure_url comes first and og:video last', () => {
    const head = `
      <meta property="og:video" content="http://cdn.example/plain.mp4">
      <meta property="og:video:url" content="http://cdn.example/url.mp4">
      <meta property="og:video:secure_url" content="https://cdn.example/secure.mp4">
      <meta property="og:video:type" content="video/mp4">`;
    expect(candidatesOf(page(head))).toEqual(['https://cdn.example/secure.mp4', 'http://cdn.example/url.mp4', 'http://cdn.example/plain.mp4']);
  });

  test('when og:video is given with name= instead of property=, then it is used all the same', () => {
    expect(candidatesOf(page('<meta name="OG:VIDEO" content="/media/og.mp4">'))).toEqual(['https://site.example/media/og.mp4']);
  });

  test('when og:video is typed as an HTML player, then that video is skipped and the next one kept', () => {
    const head = `
      <meta property="og:video" content="https://player.example/embed/42">
      <meta property="og:video:secure_url" content="https://player.example/embed/42">
      <meta property="og:video:type" content="text/html">
      <meta property="og:video" content="https://cdn.example/42.mp4">
      <meta property="og:video:type" content="video/mp4">`;
    expect(candidatesOf(page(head))).toEqual(['https://cdn.example/42.mp4']);
  });

  test('when twitter:player:stream is there, then it is a candidate and twitter:player is not', () => {
    const head = `
      <meta name="twitter:player" content="https://site.example/embed/7">
      <meta name="twitter:player:stream" content="https://cdn.example/7.mp4">`;
    expect(candidatesOf(page(head))).toEqual(['https://cdn.example/7.mp4']);
  });

  test('when JSON-LD has a VideoObject, then its contentUrl is a candidate and its embedUrl is not', () => {
    const data = { '@context': 'https://schema.org', '@type': 'VideoObject', contentUrl: '/media/ld.mp4', embedUrl: '/embed/ld' };
    expect(candidatesOf(page(jsonLd(data)))).toEqual(['https://site.example/media/ld.mp4']);
  });

  test('when VideoObjects sit in an @graph, in arrays and in nested objects, then all are found in order', () => {
    const graph = {
      '@context': 'https://schema.org',
      '@graph': [
        { '@type': 'WebPage', name: 'Episode 1', video: { '@type': ['Thing', 'VideoObject'], contentUrl: 'https://cdn.example/nested.mp4' } },
        { '@type': 'http://schema.org/VideoObject', contentUrl: ['https://cdn.example/graph.m3u8'] },
        { '@type': 'ImageObject', contentUrl: 'https://cdn.example/image.jpg' },
      ],
    };
    const list = [{ '@type': 'VideoObject', contentUrl: 'https://cdn.example/list.mp4' }];
    expect(candidatesOf(page(jsonLd(graph) + jsonLd(list)))).toEqual([
      'https://cdn.example/nested.mp4',
      'https://cdn.example/graph.m3u8',
      'https://cdn.example/list.mp4',
    ]);
  });

  test('when a JSON-LD block cannot be parsed, then it is ignored and the others still count', () => {
    const broken = '<script type="application/ld+json">{"@type": "VideoObject", "contentUrl": "/broken.mp4",}</script>';
    const good = jsonLd({ '@type': 'VideoObject', contentUrl: '/good.mp4' });
    expect(candidatesOf(page(broken + good))).toEqual(['https://site.example/good.mp4']);
  });
});

describe('findMediaInPage: playlist URLs in the page text', () => {
  test('when an inline script holds JSON with escaped slashes, then the .m3u8 and .mpd URLs are unescaped', () => {
    const config = String.raw`{"hls":"https:\/\/cdn.example\/live\/master.m3u8?token=a\u0026exp=9","dash":"\/dash\/manifest.mpd"}`;
    const script = `<script>window.__PLAYER__ = ${config};</script>`;
    expect(candidatesOf(page('', script))).toEqual(['https://cdn.example/live/master.m3u8?token=a&exp=9', 'https://site.example/dash/manifest.mpd']);
  });

  test('when playlist URLs are protocol-relative, root-relative in quotes, or in an attribute with &amp;, then all are found', () => {
    const body = `
      <script>player.load('//cdn.example/a/index.m3u8'); fallback = "/b/stream.MPD";</script>
      <div data-config="{&quot;src&quot;:&quot;/c/master.m3u8?x=1&amp;y=2&quot;}"></div>
      <p>Or open https://cdn.example/d/prose.m3u8.</p>`;
    expect(candidatesOf(page('', body))).toEqual([
      'https://cdn.example/a/index.m3u8',
      'https://site.example/b/stream.MPD',
      'https://site.example/c/master.m3u8?x=1&y=2',
      'https://cdn.example/d/prose.m3u8',
    ]);
  });

  test('when a script only tests for the extensions, then no URL is made up from it', () => {
    const script = String.raw`<script>if (src.endsWith('.m3u8') || /\.mpd$/.test(src) || type === "m3u8") play(src);</script>`;
    expect(candidatesOf(page('', script))).toEqual([]);
  });

  test('when a page has media of every kind, then they come in order of preference without duplicates', () => {
    const head = `
      <meta property="og:video" content="https://cdn.example/og.mp4">
      <meta property="og:video:secure_url" content="https://cdn.example/og-secure.mp4">
      <meta name="twitter:player:stream" content="https://cdn.example/twitter.mp4">
      ${jsonLd({ '@type': 'VideoObject', contentUrl: 'https://cdn.example/ld.mp4' })}`;
    const body = `
      <script>var hls = "https://cdn.example/hls/master.m3u8";</script>
      <video src="https://cdn.example/og.mp4"><source src="https://cdn.example/element.webm"></video>`;
    expect(candidatesOf(page(head, body))).toEqual([
      'https://cdn.example/og.mp4',
      'https://cdn.example/element.webm',
      'https://cdn.example/og-secure.mp4',
      'https://cdn.example/twitter.mp4',
      'https://cdn.example/ld.mp4',
      'https://cdn.example/hls/master.m3u8',
    ]);
  });

  test('when a page has no media at all, then there are no candidates and no title', () => {
    const html = '<html><body><a href="/other.html">Other</a><img src="/a.png"><script>var x = 1;</script></body></html>';
    expect(findMediaInPage({ html, pageUrl: PAGE_URL })).toEqual({ candidates: [], title: null, subtitles: [] });
  });
});

describe('findMediaInPage: title', () => {
  test('when og:title is there, then it wins over <title>', () => {
    expect(titleOf(page('<title>Site name | Episode</title><meta property="og:title" content="Episode 1">'))).toBe('Episode 1');
  });

  test('when there is only a <title> with entities and line breaks, then it is decoded and collapsed', () => {
    expect(titleOf(page('<title>\n  Fish &amp; Chips &#8212;\n\t&quot;Part&nbsp;2&quot; &lt;HD&gt;  </title>'))).toBe('Fish & Chips — "Part 2" <HD>');
  });

  test('when og:title has entities, then they are decoded', () => {
    expect(titleOf(page('<meta property="og:title" content="Tom &amp; Jerry&#39;s &eacute;t&eacute;">'))).toBe("Tom & Jerry's été");
  });

  test('when og:title is blank and an SVG has a <title>, then the document <title> is used', () => {
    const html = page('<meta property="og:title" content="  "><title>The real title</title>', '<svg><title>Play icon</title></svg>');
    expect(titleOf(html)).toBe('The real title');
  });
});

describe('manifestUrlsInText against the regular expression it replaced', () => {
  // The rules of the linear scanner are those of this expression, which takes quadratic time in a
  // run of slashes; on small texts it is the oracle.
  const URL_CHAR = String.raw`[^\s"'<>\\\`()[\]{}]`;
  const MANIFEST_END = String.raw`\.(?:m3u8|mpd)(?![\w/-])(?:[?#]${URL_CHAR}*)?`;
  const MANIFEST_URL = new RegExp(String.raw`(?:https?:)?//${URL_CHAR}+?${MANIFEST_END}|(?<=["'])/(?!/)${URL_CHAR}*?${MANIFEST_END}(?=["'])`, 'gi');
  const regexUrls = (html: string) => {
    const unescaped = html.replace(/\\u([0-9a-fA-F]{4})|\\\//g, (_escape, hex?: string) =>
      hex === undefined ? '/' : String.fromCharCode(Number.parseInt(hex, 16)),
    );
    return Array.from(decodeHTML(unescaped).matchAll(MANIFEST_URL), (match) => match[0]);
  };

  const pieces = [
    '/',
    '//',
    '.',
    ':',
    '?',
    '#',
    '"',
    "'",
    ' ',
    '\n',
    '\t',
    '\u00a0',
    '\u2028',
    '-',
    '_',
    '=',
    '&',
    ',',
    'a',
    'Z',
    '0',
    '8',
    'é',
    'ſ',
    'm3u8',
    'M3U8',
    'mpd',
    'MpD',
    'm3u',
    'mp',
    '.m',
    'u8',
    'pd',
    '.m3u8',
    '.mpd',
    '.m\u0013u8',
    '.M3U\u0018',
    'httpſ:',
    'h',
    'ttp',
    's:',
    'http',
    'HTTPS',
    'https',
    'http:',
    'https://',
    'HTTP://',
    'HttPS://',
    'ftp://',
    '<',
    '>',
    '(',
    ')',
    '[',
    '}',
    '`',
    '\\',
    '\\/',
    '\\u002F',
    '\\u0022',
    '&amp;',
    '&quot;',
    '&#47;',
    '&sol;',
  ];
  const pageText = fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((parts) => parts.join(''));

  test('when any text is built from slashes, quotes, schemes and extensions, then the scanner finds exactly what the regex found', () => {
    fc.assert(
      fc.property(pageText, (text) => {
        expect(manifestUrlsInText(text)).toEqual(regexUrls(text));
      }),
      { numRuns: 20_000 },
    );
  });

  test('when texts are ordinary pages with URLs in scripts, attributes and prose, then the scanner finds exactly what the regex found', () => {
    const url = fc
      .tuple(
        fc.constantFrom('https://cdn.example', '//cdn.example', '', 'http://a.b'),
        fc.constantFrom('/v/master', '/x', '/a.b/c', ''),
        fc.constantFrom('.m3u8', '.mpd', '.MPD', '.m3u8x', '.mp4'),
      )
      .chain(([origin, path, extension]) => fc.constantFrom('', '?a=1&amp;b=2', '#t=3', '/').map((tail) => origin + path + extension + tail));
    const context = fc.constantFrom(['"', '"'], ["'", "'"], [' ', ' '], ['(', ')'], ['=', '&'], ['\\"', '\\"']);
    const text = fc
      .array(fc.tuple(context, url), { maxLength: 8 })
      .map((parts) => parts.map(([[open, close], written]) => `x${open}${written}${close}`).join(' '));
    fc.assert(
      fc.property(text, (page) => {
        expect(manifestUrlsInText(page)).toEqual(regexUrls(page));
      }),
      { numRuns: 5_000 },
    );
  });
});

describe("walkHtml against htmlparser2's parseDocument", () => {
  type Node = string | { name: string; attributes: Record<string, string>; within: string[]; children: Node[] };

  const ANCESTORS_ASKED = ['video', 'svg', 'script', 'title'];

  /** Text merged across comments, which neither side counts as text. */
  function addText(children: Node[], text: string): void {
    const last = children.at(-1);
    if (typeof last === 'string') children[children.length - 1] = last + text;
    else if (text) children.push(text);
  }

  function treeFromWalk(html: string): Node[] {
    const root: Node[] = [];
    const open: { children: Node[] }[] = [{ children: root }];
    walkHtml(html, {
      open(element, ancestors) {
        expect(element.depth).toBe(open.length - 1);
        const node = {
          name: element.name,
          attributes: Object.fromEntries(element.attributes),
          within: ANCESTORS_ASKED.filter((name) => ancestors.has(name)),
          children: [],
        };
        open.at(-1)!.children.push(node);
        open.push(node);
      },
      text(text) {
        addText(open.at(-1)!.children, text);
      },
      close(depth) {
        expect(depth).toBe(open.length - 2);
        open.pop();
      },
    });
    expect(open).toHaveLength(1);
    return root;
  }

  type DomNode = ReturnType<typeof parseDocument>['children'][number];
  type DomElement = ReturnType<typeof findAll>[number];

  function treeFromDom(nodes: DomNode[], within: string[] = []): Node[] {
    const children: Node[] = [];
    for (const node of nodes) {
      if ('data' in node && String(node.type) === 'text') addText(children, node.data);
      else if ('name' in node && 'attribs' in node) {
        const inside = [...new Set([...within, node.name])];
        children.push({
          name: node.name,
          attributes: { ...node.attribs },
          within: ANCESTORS_ASKED.filter((name) => within.includes(name)),
          children: treeFromDom(node.children, inside),
        });
      }
    }
    return children;
  }

  const markup = [
    '<meta property="og:video" content=/m.mp4>',
    '<meta name=twitter:title content="a &amp; b">',
    '<base>',
    '<base href="/b/">',
    '<video>',
    '</video>',
    '<source src="/a.mp4">',
    '<VIDEO SRC=Y>',
    '<audio src=z title="t" aria-label=l>',
    '</audio>',
    '<svg>',
    '</svg>',
    '<svg/>',
    '<Svg>',
    '<title>',
    '</title>',
    '<title/>',
    '<title a="1" a="2">',
    '<div>',
    '</div>',
    '<p>',
    '</p>',
    '<a href=x>',
    '</a>',
    '<form>',
    '</form>',
    '<math>',
    '</math>',
    '<mi>',
    '<foreignObject>',
    '</foreignobject>',
    '<clipPath>',
    '</clippath>',
    '<desc>',
    '<path/>',
    '<x/>',
    '<b>',
    '</b>',
    '<i>',
    '</i>',
    '<script type="application/ld+json">',
    '<script TYPE=" Application/LD+JSON ">',
    '{"@type":"VideoObject"}',
    '<script>',
    '</script>',
    '<style>',
    '</style>',
    '<textarea>',
    '</textarea>',
    '<xmp>',
    '<br/>',
    '</br>',
    '<img>',
    '<image>',
    '</image>',
    '<input>',
    '<select>',
    '<option>',
    '<li>',
    '<table>',
    '<tr>',
    '<td>',
    '<th>',
    '<tbody>',
    '<thead>',
    '<h1>',
    '<dd>',
    '<rt>',
    '<body>',
    '<head>',
    '<meta name=a content=b>',
    '<base href=x>',
    '<plaintext>',
    '<!--c-->',
    '<![CDATA[d]]>',
    '<!doctype html>',
    '<?pi?>',
    '&amp;',
    '&lt;',
    '&quot',
    'text',
    ' ',
    '<',
    '>',
    '"',
    '/',
    '=',
    '</',
  ];
  const page = fc.array(fc.constantFrom(...markup), { maxLength: 40 }).map((parts) => parts.join(''));

  test('when any tag soup of media, SVG, MathML, forms, raw text and implied ends is walked, then it is the tree parseDocument builds', () => {
    fc.assert(
      fc.property(page, (html) => {
        expect(treeFromWalk(html)).toEqual(treeFromDom(parseDocument(html).children));
      }),
      { numRuns: 10_000 },
    );
  });

  test('when a page is read for its parts, then its base, media elements and their sources, metas, JSON-LD blocks and title are those the DOM shows', () => {
    const isJsonLd = (element: DomElement) => element.name === 'script' && element.attribs.type?.trim().toLowerCase() === 'application/ld+json';
    const within = (element: DomElement, test: (ancestor: DomElement) => boolean) => {
      for (let node = element.parent; node; node = node.parent) if ('attribs' in node && test(node)) return true;
      return false;
    };
    const nearestMedia = (element: DomElement) => {
      for (let node = element.parent; node; node = node.parent) if ('attribs' in node && (node.name === 'video' || node.name === 'audio')) return node;
      return undefined;
    };
    fc.assert(
      fc.property(page, (html) => {
        const elements = findAll(() => true, parseDocument(html).children);
        const named = (...names: string[]) => elements.filter((element) => names.includes(element.name));
        const title = named('title').find((element) => !within(element, (ancestor) => ancestor.name === 'svg'));
        expect(readPageParts(html)).toEqual({
          baseHref: named('base').find((element) => element.attribs.href !== undefined)?.attribs.href,
          mediaElements: named('video', 'audio').map((media) => ({
            name: media.name,
            urls: [media, ...named('source').filter((source) => nearestMedia(source) === media)].flatMap((element) => element.attribs.src ?? []),
            title: media.attribs.title,
            ariaLabel: media.attribs['aria-label'],
          })),
          metas: named('meta').flatMap((element) => metaTag(new Map(Object.entries(element.attribs))) ?? []),
          jsonLd: elements.filter((element) => isJsonLd(element) && !within(element, isJsonLd)).map((element) => textContent(element)),
          title: title && textContent(title),
        });
      }),
      { numRuns: 5_000 },
    );
  });
});

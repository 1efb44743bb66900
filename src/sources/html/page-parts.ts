import { metaTag, type MetaTag } from './meta-tags.ts';
import { walkHtml, type HtmlElement, type HtmlVisitor } from './walk-html.ts';

/**
 * A `<video>` or `<audio>` element. `urls` are its media URLs as written, in the order they are
 * tried: its `src`, then the `src` of each `<source>` it holds (at any depth; one inside an
 * `<audio>` inside a `<video>` is the audio's), in document order; the first MAX_URLS_PER_ELEMENT.
 */
export type MediaElement = { name: 'video' | 'audio'; urls: string[]; title: string | undefined; ariaLabel: string | undefined };

/**
 * Media elements kept at most, and URLs of each: far more than an honest page has (a collection
 * takes 500 entries, the page reader tries 5 URLs), and an 8 MiB page of `<video>` tags would
 * otherwise hold a million of them in memory.
 */
const MAX_MEDIA_ELEMENTS = 4096;
const MAX_URLS_PER_ELEMENT = 64;

/** What a page says about its media, gathered in one walk of its elements. */
export type PageParts = {
  /** The `href` of the first `<base>` that has one. */
  baseHref: string | undefined;
  /** The `<video>` and `<audio>` elements, in the document order of their start tags; the first MAX_MEDIA_ELEMENTS. */
  mediaElements: MediaElement[];
  metas: MetaTag[];
  /** The text of each `<script type="application/ld+json">`, in document order. */
  jsonLd: string[];
  /** The text of the document's first `<title>` (an SVG's names an icon); entities decoded. */
  title: string | undefined;
};

/** The text of the element opened at `depth`, gathered while it is open. */
type Gathering = { depth: number; pieces: string[] };

function isJsonLd(element: HtmlElement): boolean {
  return element.name === 'script' && element.attributes.get('type')?.trim().toLowerCase() === 'application/ld+json';
}

/** What the page says, and what `also` (such as videoTrackReader's) reads in the same walk. */
export function readPageParts(html: string, also?: HtmlVisitor): PageParts {
  const parts: PageParts = { baseHref: undefined, mediaElements: [], metas: [], jsonLd: [], title: undefined };
  // The open media elements, innermost last, with the depth each was opened at.
  const media: { element: MediaElement; depth: number }[] = [];
  let titleSeen = false;
  let title: Gathering | null = null;
  // Scripts nest only in SVG or MathML content. The outermost block is read, with the text of
  // those inside it; reading each inner one again would make a deep nest quadratic.
  let script: Gathering | null = null;
  walkHtml(html, {
    open(element, ancestors) {
      const { name, attributes } = element;
      if (name === 'base' && parts.baseHref === undefined) parts.baseHref = attributes.get('href');
      if (name === 'video' || name === 'audio') {
        const src = attributes.get('src');
        const mediaElement: MediaElement = {
          name,
          urls: src === undefined ? [] : [src],
          title: attributes.get('title'),
          ariaLabel: attributes.get('aria-label'),
        };
        // One past the bound is still followed, so that its sources are not taken for its parent's.
        if (parts.mediaElements.length < MAX_MEDIA_ELEMENTS) parts.mediaElements.push(mediaElement);
        media.push({ element: mediaElement, depth: element.depth });
      }
      if (name === 'source') {
        const src = attributes.get('src');
        const urls = media.at(-1)?.element.urls;
        if (src !== undefined && urls !== undefined && urls.length < MAX_URLS_PER_ELEMENT) urls.push(src);
      }
      if (name === 'meta') {
        const meta = metaTag(attributes);
        if (meta) parts.metas.push(meta);
      }
      if (name === 'title' && !titleSeen && !ancestors.has('svg')) {
        titleSeen = true;
        title = { depth: element.depth, pieces: [] };
      }
      if (!script && isJsonLd(element)) script = { depth: element.depth, pieces: [] };
      also?.open(element, ancestors);
    },
    text(text) {
      title?.pieces.push(text);
      script?.pieces.push(text);
      also?.text(text);
    },
    close(depth) {
      also?.close(depth);
      if (depth === media.at(-1)?.depth) media.pop();
      if (depth === title?.depth) {
        parts.title = title.pieces.join('');
        title = null;
      }
      if (depth === script?.depth) {
        parts.jsonLd.push(script.pieces.join(''));
        script = null;
      }
    },
  });
  return parts;
}

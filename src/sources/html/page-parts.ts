import { metaTag, type MetaTag } from './meta-tags.ts';
import { walkHtml, type HtmlElement, type HtmlVisitor } from './walk-html.ts';

/** What a page says about its media, gathered in one walk of its elements. */
export type PageParts = {
  /** The `href` of the first `<base>` that has one. */
  baseHref: string | undefined;
  /** `<video src>` and the `<source src>` inside videos, in document order. */
  videoUrls: string[];
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
  const parts: PageParts = { baseHref: undefined, videoUrls: [], metas: [], jsonLd: [], title: undefined };
  let titleSeen = false;
  let title: Gathering | null = null;
  // Scripts nest only in SVG or MathML content. The outermost block is read, with the text of
  // those inside it; reading each inner one again would make a deep nest quadratic.
  let script: Gathering | null = null;
  walkHtml(html, {
    open(element, ancestors) {
      const { name, attributes } = element;
      if (name === 'base' && parts.baseHref === undefined) parts.baseHref = attributes.get('href');
      if (name === 'video' || (name === 'source' && ancestors.has('video'))) {
        const src = attributes.get('src');
        if (src !== undefined) parts.videoUrls.push(src);
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

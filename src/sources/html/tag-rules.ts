// The HTML nesting rules that htmlparser2's Parser (12.0.0, pinned in package.json) follows, written
// out here because it keeps them to itself: walk-html.ts builds the same tree as parseDocument, in
// linear time. A test compares the two on generated pages, so an upgrade that changes the rules
// shows there.

const words = (list: string) => new Set(list.split(' '));

const VOID_ELEMENTS = words('area base basefont br col command embed frame hr img input isindex keygen link meta param source track wbr');

const FORM_TAGS = words('input option optgroup select button datalist textarea');
const P_TAG = words('p');
const HEADING_TAGS = words('h1 h2 h3 h4 h5 h6 p');
const TABLE_SECTION_TAGS = words('thead tbody');
const DD_DT_TAGS = words('dd dt');
const RT_RP_TAGS = words('rt rp');

/** Open elements (on top of the stack) that a start tag closes first, such as a `<p>` before a `<div>`. */
const START_TAG_CLOSES = new Map<string, ReadonlySet<string>>([
  ['tr', words('tr th td')],
  ['th', words('th')],
  ['td', words('thead th td')],
  ['body', words('head link script')],
  ['a', words('a')],
  ['li', words('li')],
  ['option', words('option')],
  ['optgroup', words('optgroup option')],
  ...[...HEADING_TAGS].filter((name) => name !== 'p').map((name) => [name, HEADING_TAGS] as const),
  ...[...words('select input output button datalist textarea')].map((name) => [name, FORM_TAGS] as const),
  ...[...DD_DT_TAGS].map((name) => [name, DD_DT_TAGS] as const),
  ...[...RT_RP_TAGS].map((name) => [name, RT_RP_TAGS] as const),
  ...[...words('tbody tfoot')].map((name) => [name, TABLE_SECTION_TAGS] as const),
  ...[...words('p address article aside blockquote details div dl fieldset figcaption figure footer form header hr main nav ol pre section table ul')].map(
    (name) => [name, P_TAG] as const,
  ),
]);

/** Elements whose content is tokenized as SVG or MathML: no raw-text `<script>` or `<title>`, `/>` closes. */
const FOREIGN_ROOTS = new Map<string, 'svg' | 'math'>([
  ['svg', 'svg'],
  ['math', 'math'],
]);

/** Elements inside SVG or MathML whose content is HTML again (in SVG's spelling of their names). */
const HTML_INTEGRATION_POINTS = words('mi mo mn ms mtext annotation-xml foreignObject desc title');

/** Inside SVG, tag names keep SVG's camel case. */
export const SVG_TAG_NAMES = new Map(
  [
    'altGlyph altGlyphDef altGlyphItem animateColor animateMotion animateTransform clipPath feBlend feColorMatrix',
    'feComponentTransfer feComposite feConvolveMatrix feDiffuseLighting feDisplacementMap feDistantLight feDropShadow',
    'feFlood feFuncA feFuncB feFuncG feFuncR feGaussianBlur feImage feMerge feMergeNode feMorphology feOffset',
    'fePointLight feSpecularLighting feSpotLight feTile feTurbulence foreignObject glyphRef linearGradient radialGradient textPath',
  ]
    .join(' ')
    .split(' ')
    .map((name) => [name.toLowerCase(), name]),
);

/** What the rules say of a tag name. */
export type TagRule = {
  readonly isVoid: boolean;
  /** Open elements that its start tag closes first while they are on top, such as `<p>` for `<div>`. */
  readonly closes: ReadonlySet<string> | undefined;
  /** What its content is when it changes: SVG, MathML, or HTML again inside an integration point. */
  readonly begins: 'html' | 'svg' | 'math' | undefined;
};

const PLAIN: TagRule = { isVoid: false, closes: undefined, begins: undefined };

const RULES = new Map<string, TagRule>(
  [...VOID_ELEMENTS, ...START_TAG_CLOSES.keys(), ...FOREIGN_ROOTS.keys(), ...HTML_INTEGRATION_POINTS].map((name) => [
    name,
    {
      isVoid: VOID_ELEMENTS.has(name),
      closes: START_TAG_CLOSES.get(name),
      begins: FOREIGN_ROOTS.get(name) ?? (HTML_INTEGRATION_POINTS.has(name) ? 'html' : undefined),
    },
  ]),
);

export function ruleOf(name: string): TagRule {
  return RULES.get(name) ?? PLAIN;
}

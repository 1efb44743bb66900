import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import { ruleOf, SVG_TAG_NAMES, type TagRule } from './tag-rules.ts';

// A page is an attacker's, and its nesting is as deep as it likes; htmlparser2's Parser is quadratic
// in it (docs/performance.md). This walk reads the same tokens with the Parser's rules over a stack
// that only pushes and pops, counts the open elements of each name, and calls its visitor on the
// way down, so nothing here costs more than linear time or recurses.

export type HtmlElement = {
  /** Lower case, except SVG's camel-case names inside an `<svg>` (as htmlparser2 names them). */
  readonly name: string;
  /** Names in lower case; the first of repeated attributes wins; entities decoded. */
  readonly attributes: ReadonlyMap<string, string>;
  /** How many elements it is inside. */
  readonly depth: number;
};

export type OpenElements = {
  /** Whether an element of this name is open, i.e. an ancestor of the element being visited. */
  has(name: string): boolean;
};

export type HtmlVisitor = {
  /** Called once a start tag has been read, before its content. */
  open(element: HtmlElement, ancestors: OpenElements): void;
  /** Text in document order, each piece within every element open at the time. */
  text(text: string): void;
  /** The element opened at `depth` ends: at its end tag, an end tag of an ancestor, or the end of the page. */
  close(depth: number): void;
};

type Context = 'html' | 'svg' | 'math';

const NO_ATTRIBUTES: ReadonlyMap<string, string> = new Map();

/** A tag name seen in the page, what the rules say of it, and how many of its elements are open. */
type Tag = { readonly name: string; readonly rule: TagRule; open: number };

class OpenElementStack implements OpenElements {
  private readonly stack: Tag[] = [];
  /** One entry per name, so that the stack holds references and an end tag finds its name at once. */
  private readonly tags = new Map<string, Tag>();
  /** The content each open `<svg>`, `<math>` and integration point began, innermost last. */
  private readonly contexts: Context[] = ['html'];

  tag(name: string): Tag {
    let tag = this.tags.get(name);
    if (!tag) this.tags.set(name, (tag = { name, rule: ruleOf(name), open: 0 }));
    return tag;
  }

  get depth(): number {
    return this.stack.length;
  }

  has(name: string): boolean {
    return (this.tags.get(name)?.open ?? 0) > 0;
  }

  top(): Tag | undefined {
    return this.stack.at(-1);
  }

  context(): Context {
    return this.contexts.at(-1) ?? 'html';
  }

  /** Inside an `<svg>`, a `<math>` or an integration point (a `<title>` is one anywhere). */
  hasContextElement(): boolean {
    return this.contexts.length > 1;
  }

  /** What the content of an element of this tag is when it is opened here. */
  contentOf(tag: Tag): Context {
    return tag.rule.begins ?? this.context();
  }

  push(tag: Tag): void {
    if (tag.rule.begins) this.contexts.push(tag.rule.begins);
    tag.open += 1;
    this.stack.push(tag);
  }

  pop(): Tag | undefined {
    const tag = this.stack.pop();
    if (!tag) return undefined;
    tag.open -= 1;
    if (tag.rule.begins) this.contexts.pop();
    return tag;
  }
}

/** The Parser's tree-building half, as Tokenizer callbacks. */
class TreeWalk implements TokenizerCallbacks {
  private readonly open = new OpenElementStack();
  /** The start tag being read; null for a second `<form>`, which HTML ignores. */
  private pending: { tag: Tag; attributes: Map<string, string> | null } | null = null;
  private attributeName = '';
  private attributeValue = '';

  constructor(
    private readonly html: string,
    private readonly visitor: HtmlVisitor,
  ) {}

  isInForeignContext(): boolean {
    return this.open.context() !== 'html';
  }

  ontext(start: number, endIndex: number): void {
    this.visitor.text(this.html.slice(start, endIndex));
  }

  ontextentity(codepoint: number): void {
    this.visitor.text(String.fromCodePoint(codepoint));
  }

  oncdata(start: number, endIndex: number, endOffset: number): void {
    // In HTML, CDATA is a comment, except in SVG and MathML where it is text.
    if (this.isInForeignContext()) this.visitor.text(this.html.slice(start, endIndex - endOffset));
  }

  onopentagname(start: number, endIndex: number): void {
    this.startTag(this.open.tag(this.tagName(start, endIndex)));
  }

  onattribname(start: number, endIndex: number): void {
    this.attributeName = this.html.slice(start, endIndex).toLowerCase();
  }

  onattribdata(start: number, endIndex: number): void {
    this.attributeValue += this.html.slice(start, endIndex);
  }

  onattribentity(codepoint: number): void {
    this.attributeValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (this.pending) {
      const attributes = (this.pending.attributes ??= new Map());
      if (!attributes.has(this.attributeName)) attributes.set(this.attributeName, this.attributeValue);
    }
    this.attributeValue = '';
  }

  onopentagend(): void {
    this.endStartTag();
  }

  onselfclosingtag(): void {
    // HTML ignores `/>` but in SVG and MathML content, which an `<svg/>` already begins.
    const tag = this.pending?.tag;
    const selfClosing = tag !== undefined && this.open.contentOf(tag) !== 'html';
    const depth = this.open.depth;
    this.endStartTag();
    if (selfClosing && this.open.depth > depth) this.close();
  }

  onclosetag(start: number, endIndex: number): void {
    const tag = this.open.tag(this.tagName(start, endIndex));
    if (tag.rule.isVoid) {
      // `</br>` is a `<br>`; other void elements have no end tag.
      if (tag.name === 'br') this.emptyElement(tag);
    } else if (tag.open > 0) {
      for (let closed = this.close(); closed !== undefined && closed !== tag; closed = this.close());
    } else if (tag.name === 'p') {
      // `</p>` without a `<p>` is an empty paragraph.
      this.emptyElement(tag);
    }
  }

  onend(): void {
    for (let closed = this.close(); closed !== undefined; closed = this.close());
  }

  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}

  private tagName(start: number, endIndex: number): string {
    const name = this.html.slice(start, endIndex).toLowerCase();
    if (this.open.context() === 'svg') return SVG_TAG_NAMES.get(name) ?? name;
    // `</foreignObject>` from inside the HTML content of a `<foreignObject>`.
    const svgName = this.open.hasContextElement() ? SVG_TAG_NAMES.get(name) : undefined;
    if (svgName !== undefined && this.open.has(svgName)) return svgName;
    return name === 'image' && !this.isInForeignContext() ? 'img' : name;
  }

  private startTag(tag: Tag): void {
    if (tag.name === 'form' && tag.open > 0) {
      this.pending = null;
      return;
    }
    const { closes } = tag.rule;
    if (closes) while (closes.has(this.open.top()?.name ?? '')) this.close();
    this.pending = { tag, attributes: null };
  }

  private endStartTag(): void {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return;
    const { tag } = pending;
    const depth = this.open.depth;
    this.visitor.open({ name: tag.name, attributes: pending.attributes ?? NO_ATTRIBUTES, depth }, this.open);
    if (tag.rule.isVoid) this.visitor.close(depth);
    else this.open.push(tag);
  }

  private emptyElement(tag: Tag): void {
    this.startTag(tag);
    this.endStartTag();
    if (this.open.top() === tag) this.close();
  }

  /** Ends the innermost open element; its tag. */
  private close(): Tag | undefined {
    const tag = this.open.pop();
    if (tag) this.visitor.close(this.open.depth);
    return tag;
  }
}

/** Walks `html` as htmlparser2's parseDocument would build it, element by element, in document order. */
export function walkHtml(html: string, visitor: HtmlVisitor): void {
  const tokenizer = new Tokenizer({}, new TreeWalk(html, visitor));
  tokenizer.write(html);
  tokenizer.end();
}

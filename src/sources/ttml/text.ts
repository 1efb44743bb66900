import { withoutControls } from '../../core/text.ts';
import { CDATA_SECTION_NODE, ELEMENT_NODE, TEXT_NODE, type XmlElement, type XmlNode } from './xmldom.ts';

// The text of a TTML `p`, as plain lines: spans' text kept and their styling dropped, `br` a line
// break, other elements (metadata, images, foreign vocabularies) left out, and white space handled
// as TTML does: with xml:space="default" (inherited), runs of spaces, tabs and newlines collapse
// to one space and spaces at the start and end of a line go; with "preserve" they are kept, a
// newline included. Timing on a span is not read: its text is part of the whole p's cue.

/** TTML's namespace, those of its drafts (still met in the wild), or none at all for a sloppy document. */
const TTML_NAMESPACES = new Set<string | null | undefined>([
  null,
  undefined,
  '',
  'http://www.w3.org/ns/ttml',
  'http://www.w3.org/2006/10/ttaf1',
  'http://www.w3.org/2006/04/ttaf1',
]);

export function isTtml(node: XmlNode, name: string): node is XmlElement {
  if (node.nodeType !== ELEMENT_NODE) return false;
  const element = node as XmlElement;
  return element.localName === name && TTML_NAMESPACES.has(element.namespaceURI);
}

/** Whether white space is preserved in this element: its own xml:space, else its parent's. */
export function preservesSpace(element: XmlElement, inherited: boolean): boolean {
  const space = element.getAttribute('xml:space');
  return space === 'preserve' ? true : space === 'default' ? false : inherited;
}

/** Stands for a collapsible space until its line is complete (control characters never reach a line). */
const COLLAPSIBLE = '\u0001';

function finishLine(line: string): string {
  let text = line.replace(/\u0001+/g, COLLAPSIBLE);
  if (text.startsWith(COLLAPSIBLE)) text = text.slice(1);
  if (text.endsWith(COLLAPSIBLE)) text = text.slice(0, -1);
  text = text.replaceAll(COLLAPSIBLE, ' ').trimEnd();
  return text.trim() === '' ? '' : text;
}

/** The lines of a `p`'s text joined with `\n`, blank lines left out; empty when it shows nothing. */
export function cueText(p: XmlElement, preserve: boolean): string {
  const lines: string[] = [];
  let line = '';
  const add = (raw: string, preserve: boolean) => {
    const text = withoutControls(raw);
    if (!preserve) {
      line += text.replace(/[ \t\n\r]+/g, COLLAPSIBLE);
      return;
    }
    const parts = text.split(/\r\n?|\n/);
    for (let index = 0; index < parts.length - 1; index++) {
      lines.push(line + parts[index]);
      line = '';
    }
    line += parts.at(-1);
  };
  // Recursion as deep as spans nest, which the XML guard bounds.
  const visit = (parent: XmlElement, preserve: boolean) => {
    for (let child = parent.firstChild; child; child = child.nextSibling) {
      if (child.nodeType === TEXT_NODE || child.nodeType === CDATA_SECTION_NODE) add(child.nodeValue ?? '', preserve);
      else if (isTtml(child, 'br')) {
        lines.push(line);
        line = '';
      } else if (isTtml(child, 'span')) visit(child, preservesSpace(child, preserve));
    }
  };
  visit(p, preserve);
  lines.push(line);
  return lines
    .map(finishLine)
    .filter((text) => text !== '')
    .join('\n');
}

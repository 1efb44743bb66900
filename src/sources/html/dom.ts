import { findAll } from 'domutils';
import type { parseDocument } from 'htmlparser2';

// domhandler's node types, named through the packages this code depends on directly.
export type HtmlDocument = ReturnType<typeof parseDocument>;
export type HtmlElement = ReturnType<typeof findAll>[number];

/** Elements of the document in document order, by tag name (htmlparser2 lower-cases them). */
export function elementsNamed(document: HtmlDocument, ...names: string[]): HtmlElement[] {
  return findAll((element) => names.includes(element.name), document.children);
}

export function isInside(element: HtmlElement, ancestorName: string): boolean {
  for (let node = element.parent; node; node = node.parent) {
    if ('name' in node && node.name === ancestorName) return true;
  }
  return false;
}

import { createRequire } from 'node:module';

// @xmldom/xmldom, typed by the part of its DOM that the TTML reader walks (as mpd-parser.d.ts
// types the DASH planner's view of it). Its own declarations begin with
// `/// <reference lib="dom" />`, which would bring the browser's DOM types into the whole program
// and break code typed against Node's fetch and streams; so it is loaded with require, out of
// TypeScript's sight. (A direct dependency, at the version mpd-parser uses.)

export type XmlNode = {
  readonly nodeType: number;
  readonly nodeValue: string | null;
  readonly firstChild: XmlNode | null;
  readonly nextSibling: XmlNode | null;
};

export type XmlAttribute = { readonly localName: string; readonly prefix: string | null; readonly namespaceURI: string | null; readonly value: string };

export type XmlElement = XmlNode & {
  readonly localName: string;
  readonly namespaceURI: string | null;
  readonly attributes: ArrayLike<XmlAttribute>;
  /** The attribute of that qualified name; xmldom answers '' (not null) for one absent. */
  getAttribute(name: string): string | null;
};

type Complaint = (message: string) => void;

type Xmldom = {
  DOMParser: new (options: { errorHandler: { warning: Complaint; error: Complaint; fatalError: Complaint } }) => {
    parseFromString(source: string, mimeType: string): { readonly documentElement: XmlElement | null };
  };
};

const { DOMParser } = createRequire(import.meta.url)('@xmldom/xmldom') as Xmldom;

export const ELEMENT_NODE = 1;
export const TEXT_NODE = 3;
export const CDATA_SECTION_NODE = 4;

/**
 * The root element of an XML document, or null for one without; `complain` is called on each of
 * xmldom's warnings and errors (it may throw to end the parse there).
 */
export function parseXmlRoot(xml: string, complain: Complaint): XmlElement | null {
  const parser = new DOMParser({ errorHandler: { warning: complain, error: complain, fatalError: complain } });
  return parser.parseFromString(xml, 'application/xml').documentElement;
}

import { DownloadError } from '../../core/errors.ts';

// xmldom is not linear on hostile XML: it rescans to the end of the document for every unclosed
// `<![CDATA[`, `<?` or `<!--`, for every distinct element name (to guess whether a start tag is
// ever closed), and a stray end tag it cannot match is silently ignored, so its nesting can grow
// past what any count of the text would say.
//
// So before xmldom sees a TTML document, one linear pass checks that its markup is well formed in
// the strict subset of XML on which xmldom has nothing to rescan and agrees with this pass on the
// nesting, and that it stays within the bounds below. Anything else is refused. The document type
// declaration is cut out (xmldom never reads an external DTD, but neither does it need the name);
// one with an internal subset, which is where entity bombs live, is refused. TTML needs no DTD.

/** Real TTML nests tt/body/div/p/span/span/br: a few levels, rarely more than ten. */
export const MAX_DEPTH = 64;
/** Elements, comments, processing instructions and CDATA sections: each is an object in the DOM. */
export const MAX_NODES = 300_000;
/** xmldom scans the whole document once per distinct element name; TTML has a few dozen. */
export const MAX_ELEMENT_NAMES = 64;

const refuse = (why: string) => new DownloadError('unsupported_source', `The TTML subtitles are not well-formed XML (${why}).`);
const tooLarge = (why: string) => new DownloadError('source_too_large', `The TTML subtitles ${why}.`);

/** As xmldom does before parsing, so that both passes read the same characters. */
export function normalizeLineEndings(xml: string): string {
  return xml.replace(/\r[\n\u0085]/g, '\n').replace(/[\r\u0085\u2028]/g, '\n');
}

const isSpace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
/** What xmldom takes as part of a name: not a space or control character, nor markup. */
const NOT_IN_NAMES = new Set([0x80, ...Array.from('<>/="\'', (c) => c.charCodeAt(0))]);
const isNameChar = (code: number) => code > 0x20 && !NOT_IN_NAMES.has(code);

function skipSpaces(xml: string, at: number): number {
  while (isSpace(xml.charCodeAt(at))) at++;
  return at;
}

function skipName(xml: string, at: number): number {
  while (at < xml.length && isNameChar(xml.charCodeAt(at))) at++;
  return at;
}

/** Just past `terminator`, searched from `from`. */
function past(xml: string, terminator: string, from: number, what: string): number {
  const at = xml.indexOf(terminator, from);
  if (at < 0) throw refuse(`an unclosed ${what}`);
  return at + terminator.length;
}

/** A start tag from its name at `at`: `name (S+ attr S* = S* "value")* S* /? >`. */
function startTag(xml: string, at: number): { name: string; end: number; empty: boolean } {
  const nameEnd = skipName(xml, at);
  if (nameEnd === at) throw refuse('a tag without a name');
  const name = xml.slice(at, nameEnd);
  let i = nameEnd;
  for (;;) {
    const afterSpace = skipSpaces(xml, i);
    const c = xml[afterSpace];
    if (c === '>') return { name, end: afterSpace + 1, empty: false };
    if (c === '/' && xml[afterSpace + 1] === '>') return { name, end: afterSpace + 2, empty: true };
    const attrEnd = skipName(xml, afterSpace);
    if (afterSpace === i || attrEnd === afterSpace) throw refuse('a malformed start tag');
    i = skipSpaces(xml, attrEnd);
    if (xml[i] !== '=') throw refuse('an attribute without a value');
    i = skipSpaces(xml, i + 1);
    const quote = xml[i];
    if (quote !== '"' && quote !== "'") throw refuse('an unquoted attribute value');
    i = past(xml, quote, i + 1, 'attribute value');
  }
}

/**
 * The document as xmldom should parse it (line endings normalized, the DOCTYPE cut out), once its
 * markup has been checked as above; throws a DownloadError otherwise.
 */
export function guardXml(source: string): string {
  const xml = normalizeLineEndings(source);
  const open: string[] = [];
  const names = new Set<string>();
  let nodes = 0;
  let rootSeen = false;
  let doctype: [number, number] | null = null;
  let i = 0;
  for (let lt = xml.indexOf('<'); lt >= 0; lt = xml.indexOf('<', i)) {
    if (xml[lt + 1] !== '/' && ++nodes > MAX_NODES) throw tooLarge(`hold more than ${MAX_NODES} nodes`);
    if (xml.startsWith('<!--', lt)) i = past(xml, '-->', lt + 4, 'comment');
    else if (xml.startsWith('<![CDATA[', lt)) i = past(xml, ']]>', lt + 9, 'CDATA section');
    else if (xml.startsWith('<?', lt)) {
      // xmldom looks for the end from the `<`, so `<?>` would end at its own `?`.
      if (xml.startsWith('<?>', lt)) throw refuse('an empty processing instruction');
      i = past(xml, '?>', lt + 2, 'processing instruction');
    } else if (xml.startsWith('<!DOCTYPE', lt)) {
      i = past(xml, '>', lt, 'document type declaration');
      if (rootSeen || doctype) throw refuse('a misplaced document type declaration');
      if (/[[<]/.test(xml.slice(lt + 9, i))) throw refuse('a document type declaration with an internal subset');
      doctype = [lt, i];
    } else if (xml.startsWith('</', lt)) {
      const nameEnd = skipName(xml, lt + 2);
      const end = skipSpaces(xml, nameEnd);
      if (xml[end] !== '>' || xml.slice(lt + 2, nameEnd) !== open.pop()) throw refuse('an end tag that closes no open element');
      i = end + 1;
    } else if (xml[lt + 1] === '!') throw refuse('markup declarations');
    else {
      const tag = startTag(xml, lt + 1);
      if (rootSeen && open.length === 0) throw refuse('more than one root element');
      rootSeen = true;
      names.add(tag.name);
      if (names.size > MAX_ELEMENT_NAMES) throw tooLarge(`use more than ${MAX_ELEMENT_NAMES} element names`);
      if (!tag.empty && open.push(tag.name) > MAX_DEPTH) throw tooLarge(`nest elements more than ${MAX_DEPTH} deep`);
      i = tag.end;
    }
  }
  if (!rootSeen) throw refuse('no root element');
  if (open.length > 0) throw refuse('an element left open');
  return doctype ? xml.slice(0, doctype[0]) + xml.slice(doctype[1]) : xml;
}

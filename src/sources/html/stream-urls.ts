import { decodeHTML } from 'entities';

// Players are often configured from inline scripts or data attributes, so playlist URLs are looked
// for in the page's source text as a whole, not in particular elements.

/** Characters a URL written into a page runs on with; quotes, brackets and spaces end it. */
const URL_CHAR = String.raw`[^\s"'<>\\\`()[\]{}]`;
const MANIFEST_END = String.raw`\.(?:m3u8|mpd)(?![\w/-])(?:[?#]${URL_CHAR}*)?`;
// Absolute and protocol-relative URLs anywhere; a root-relative path only as a whole quoted
// string, where it cannot be a piece of prose or of a regular expression.
const MANIFEST_URL = new RegExp(
  String.raw`(?:https?:)?//${URL_CHAR}+?${MANIFEST_END}|(?<=["'])/(?!/)${URL_CHAR}*?${MANIFEST_END}(?=["'])`,
  'gi',
);

/** Undoes JSON's escaping (`\/`, `\u0026`) and HTML's (`&amp;`, `&quot;`) so URLs read as written. */
function unescapePageText(text: string): string {
  const unescaped = text.replace(/\\u([0-9a-fA-F]{4})|\\\//g, (_escape, hex?: string) =>
    hex === undefined ? '/' : String.fromCharCode(Number.parseInt(hex, 16)),
  );
  return decodeHTML(unescaped);
}

/** `.m3u8` and `.mpd` URLs (as written: possibly relative) in the page text, in order. */
export function manifestUrlsInText(html: string): string[] {
  return Array.from(unescapePageText(html).matchAll(MANIFEST_URL), (match) => match[0]);
}

import { decodeHTML } from 'entities';

// Players are often configured from inline scripts or data attributes, so playlist URLs are looked
// for in the page's source text as a whole, not in particular elements.
//
// The page is an attacker's, up to 8 MiB, so the text is read in one pass whose cursors only move
// forward: a regular expression that searches lazily for the extension from every `//` takes time
// quadratic in a run of slashes (a 300 KB page of them held the event loop for 22 s).

/** A character a URL written into a page runs on with; quotes, brackets and spaces end it. */
const URL_CHAR = /[^\s"'<>\\`()[\]{}]/;
/** URL_CHAR's answer for every UTF-16 code unit, so that the scan looks each character up once. */
const IS_URL_CHAR = Uint8Array.from({ length: 0x10000 }, (_unused, code) => (URL_CHAR.test(String.fromCharCode(code)) ? 1 : 0));

const SLASH = 0x2f;
const DOT = 0x2e;
const QUESTION_MARK = 0x3f;
const HASH = 0x23;
const DASH = 0x2d;
const UNDERSCORE = 0x5f;

const isQuote = (code: number) => code === 0x22 || code === 0x27;
const isAsciiLetter = (code: number) => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;

/** Whether `word` (lower case ASCII) is written at `at`, in any case of its letters. */
function hasWordAt(text: string, at: number, word: string): boolean {
  for (let offset = 0; offset < word.length; offset++) {
    const code = text.charCodeAt(at + offset);
    const wanted = word.charCodeAt(offset);
    if (code !== wanted && !(isAsciiLetter(wanted) && code === wanted - 0x20)) return false;
  }
  return true;
}

/** Length of `.m3u8` or `.mpd` at `at` when no word character, `/` or `-` follows it (`.mpd-x`, `.m3u8/`), else 0. */
function extensionAt(text: string, at: number): number {
  if (text.charCodeAt(at) !== DOT) return 0;
  const length = hasWordAt(text, at + 1, 'm3u8') ? 5 : hasWordAt(text, at + 1, 'mpd') ? 4 : 0;
  if (length === 0) return 0;
  const next = text.charCodeAt(at + length);
  return isAsciiLetter(next) || isDigit(next) || next === UNDERSCORE || next === SLASH || next === DASH ? 0 : length;
}

/** Where the extension of a URL ends, with its `?query` or `#fragment` (the rest of the run) when it has one. */
function manifestEnd(text: string, extension: number, length: number, runEnd: number): number {
  const after = extension + length;
  const next = text.charCodeAt(after);
  return after < runEnd && (next === QUESTION_MARK || next === HASH) ? runEnd : after;
}

/** The length of `http://`, `https://` (in any case) or `//` at `at`, else 0. */
function schemeAt(text: string, at: number): number {
  if (text.charCodeAt(at) === SLASH) return text.charCodeAt(at + 1) === SLASH ? 2 : 0;
  if (!hasWordAt(text, at, 'http')) return 0;
  const colon = hasWordAt(text, at + 4, 's') ? at + 5 : at + 4;
  return text.charCodeAt(colon) === 0x3a && text.charCodeAt(colon + 1) === SLASH && text.charCodeAt(colon + 2) === SLASH ? colon + 3 - at : 0;
}

/**
 * A root-relative path is taken only as a whole quoted string (`"/a/b.m3u8?x"`), where it cannot
 * be a piece of prose or of a regular expression: the run must be all of it.
 */
function isQuotedRootPath(text: string, start: number, end: number): boolean {
  if (!isQuote(text.charCodeAt(start - 1)) || !isQuote(text.charCodeAt(end))) return false;
  if (text.charCodeAt(start) !== SLASH || text.charCodeAt(start + 1) === SLASH) return false;
  for (let at = start + 1; at < end; at++) {
    const length = extensionAt(text, at);
    if (length > 0 && manifestEnd(text, at, length, end) === end) return true;
  }
  return false;
}

/**
 * Absolute and protocol-relative manifest URLs in one run, each from its scheme (or `//`) to the
 * first extension at least one character after it. When no extension follows a scheme, none
 * follows any later one either, so the run is done.
 */
function absoluteUrlsInRun(text: string, start: number, end: number, urls: string[]): void {
  let at = start;
  while (at < end) {
    // Most characters begin no URL: only a slash or an h can.
    const code = text.charCodeAt(at);
    const scheme = code === SLASH || code === 0x68 || code === 0x48 ? schemeAt(text, at) : 0;
    if (scheme === 0) {
      at += 1;
      continue;
    }
    let extension = at + scheme + 1;
    let length = 0;
    while (extension < end && (length = extensionAt(text, extension)) === 0) extension += 1;
    if (length === 0) return;
    const urlEnd = manifestEnd(text, extension, length, end);
    urls.push(text.slice(at, urlEnd));
    at = urlEnd;
  }
}

/** Undoes JSON's escaping (`\/`, `\u0026`) and HTML's (`&amp;`, `&quot;`) so URLs read as written. */
function unescapePageText(text: string): string {
  const unescaped = text.replace(/\\u([0-9a-fA-F]{4})|\\\//g, (_escape, hex?: string) =>
    hex === undefined ? '/' : String.fromCharCode(Number.parseInt(hex, 16)),
  );
  return decodeHTML(unescaped);
}

/** `.m3u8` and `.mpd` URLs (as written: possibly relative) in the page text, in order. */
export function manifestUrlsInText(html: string): string[] {
  const text = unescapePageText(html);
  const urls: string[] = [];
  let end = 0;
  while (end < text.length) {
    let start = end;
    while (start < text.length && IS_URL_CHAR[text.charCodeAt(start)] === 0) start += 1;
    end = start;
    while (end < text.length && IS_URL_CHAR[text.charCodeAt(end)] === 1) end += 1;
    if (start === end) break;
    if (isQuotedRootPath(text, start, end)) urls.push(text.slice(start, end));
    else absoluteUrlsInRun(text, start, end, urls);
  }
  return urls;
}

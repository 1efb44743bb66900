// Text from sources (a page, a site, yt-dlp, a subtitle file, ffmpeg's reading of a file's tags) is
// hostile. One set of characters is never passed on, and each kind of text has one rule for it:
// a text of several lines, one line (a message, a reason), a label (a track's, a codec's, a title).
// A file name adds its own rules to one line (downloads/filename.ts).

/** A track's, a codec's or a site's label: at most this many code points. */
export const MAX_LABEL_CHARS = 200;

/**
 * THE control-character set. C0 controls, DEL and C1 controls (NUL ends a string where C reads it,
 * ESC starts a terminal's escape); the bidi embeddings, overrides and isolates U+202A-U+202E and
 * U+2066-U+2069, which turn the text after them around (a name can then show an extension it does
 * not have); and lone surrogates, half of a pair, which no UTF-8 text can hold. The marks LRM, RLM
 * and ALM are not in it: right-to-left writing needs them to place punctuation, and they reorder
 * nothing else.
 */
const CONTROL_SET = String.raw`\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\p{Cs}`;
const CONTROLS = new RegExp(`[${CONTROL_SET}]`, 'gu');
/** In one line, the line and paragraph separators too (U+2028, U+2029 are not in the set: a text of several lines keeps them). */
const CONTROLS_AND_SEPARATORS = new RegExp(`[${CONTROL_SET}\\u2028\\u2029]`, 'gu');
/** The controls that shape lines, which a text of several lines keeps. */
const LINE_CONTROLS = new Set(['\t', '\n', '\r']);
/** The controls and separators that part words, which one line turns into spaces; the rest of the set is removed. */
const WORD_BREAKS = new Set(['\t', '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029']);
/** What a UTF-8 encoder writes for a lone surrogate, and so what any place showed for one before. */
const REPLACEMENT = '\ufffd';
/**
 * UTF-16 units read of a text bounded at n code points: at most n * 8. A text that needs more to
 * fill its bound is mostly controls and spaces, and loses only the rest; a 10 MB label costs no
 * more than a short one.
 */
const UNITS_READ_PER_CHAR = 8;

const isSurrogate = (char: string) => char.length === 1 && char >= '\ud800' && char <= '\udfff';

/** The start of `text` that a rule bounded at `maxChars` code points reads: never half of a surrogate pair. */
export function boundedPrefix(text: string, maxChars: number): string {
  const end = UNITS_READ_PER_CHAR * maxChars;
  if (text.length <= end) return text;
  const last = text.charCodeAt(end - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end);
}

/** A text of several lines (a subtitle file, a cue): the set removed but for tab, line feed and carriage return; unbounded, as its reader bounds it. */
export function withoutControls(text: string): string {
  return text.replace(CONTROLS, (char) => (LINE_CONTROLS.has(char) ? char : isSurrogate(char) ? REPLACEMENT : ''));
}

/** The first `maxChars` code points of `text`: never half of a surrogate pair. */
function firstChars(text: string, maxChars: number): string {
  let units = 0;
  let chars = 0;
  for (const char of text) {
    if (chars === maxChars) break;
    units += char.length;
    chars += 1;
  }
  return text.slice(0, units);
}

/**
 * One line (a message, a reason): the set removed, line breaks and tabs made spaces, every run of
 * white space one space, trimmed, and at most `maxChars` code points.
 */
export function oneLine(text: string, maxChars: number): string {
  const line = boundedPrefix(text, maxChars)
    .replace(CONTROLS_AND_SEPARATORS, (char) => (WORD_BREAKS.has(char) ? ' ' : isSurrogate(char) ? REPLACEMENT : ''))
    .replace(/\s+/g, ' ')
    .trim();
  return firstChars(line, maxChars).trimEnd();
}

/** A label (a track's, a codec's, a title): one line of at most `maxChars` code points; null when nothing is left. */
export function labelOf(text: string | null | undefined, maxChars = MAX_LABEL_CHARS): string | null {
  return oneLine(text ?? '', maxChars) || null;
}

import { boundedPrefix, oneLine } from '../core/text.ts';

// The stored file's name: the one the client asked for, else the last segment of the URL, made one
// line (core/text.ts) without anything that could act as a path, with the container's extension.

/** What a file system or a shell reads as part of a path or a pattern. */
const PATH_CHARACTERS = /[/\\:*?"<>|]+/g;
// Every invisible character that changes how the rest is shown, beyond the bidi controls that one
// line removes: marks, zero-width spaces, tags. Removed rather than spaced, since zero-width
// joiners inside emoji are among them.
const FORMAT_CHARACTERS = /\p{Cf}+/gu;
/**
 * Emoji sequences whose format characters are part of the emoji, not hidden marks: pictographs
 * joined by zero width joiners (a family, a rainbow flag) and a black flag's tag sequence (the
 * flags of Scotland, England, Wales). Without their joiners or tags they would show other emoji.
 */
const EMOJI_SEQUENCES =
  /\p{Extended_Pictographic}[\ufe0f\p{Emoji_Modifier}]?(?:\u200d\p{Extended_Pictographic}[\ufe0f\p{Emoji_Modifier}]?)+|\u{1f3f4}[\u{e0020}-\u{e007e}]+\u{e007f}/gu;

/** `text` without its format characters, but for those inside emoji sequences. */
function withoutFormatCharacters(text: string): string {
  let kept = '';
  let from = 0;
  for (const sequence of text.matchAll(EMOJI_SEQUENCES)) {
    kept += text.slice(from, sequence.index).replace(FORMAT_CHARACTERS, '') + sequence[0];
    from = sequence.index + sequence[0].length;
  }
  return kept + text.slice(from).replace(FORMAT_CHARACTERS, '');
}
/** In UTF-8 bytes, so that the name with its extension stays within the 255 bytes most file systems allow. */
const MAX_BYTES = 180;

/** Made once, when the module loads: the first Segmenter loads ICU's break rules, on the event loop. */
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The longest start of `text` that is at most `max` bytes in UTF-8, never cutting a character (or an emoji's code points) apart. */
function withinBytes(text: string, max: number): string {
  let kept = '';
  let bytes = 0;
  for (const { segment } of GRAPHEMES.segment(text)) {
    bytes += Buffer.byteLength(segment);
    if (bytes > max) break;
    kept += segment;
  }
  return kept;
}

export function cleanFileName(name: string): string {
  // MAX_BYTES bytes hold at most MAX_BYTES code points.
  const plain = withoutFormatCharacters(boundedPrefix(name, MAX_BYTES)).replace(PATH_CHARACTERS, ' ');
  return withinBytes(oneLine(plain, MAX_BYTES).replace(/^[.\s]+/, ''), MAX_BYTES).trim();
}

function fromUrl(url: string): string {
  const segment = new URL(url).pathname.split('/').filter(Boolean).pop() ?? '';
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // Not valid percent-encoding: keep it as it came.
  }
  return decoded.replace(/\.[A-Za-z0-9]{1,5}$/, '');
}

/** `name` without `.ext` at its end, in any case: compared as a string, since neither may shape a pattern. */
function withoutExtension(name: string, ext: string): string {
  const suffix = `.${ext}`.toLowerCase();
  return name.slice(-suffix.length).toLowerCase() === suffix ? name.slice(0, -suffix.length) : name;
}

export function fileNameFor(requested: string | null, url: string, ext: string): string {
  const base = cleanFileName(withoutExtension(requested ?? '', ext)) || cleanFileName(fromUrl(url)) || 'video';
  return `${base}.${ext}`;
}

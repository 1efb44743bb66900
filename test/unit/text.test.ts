import { boundedPrefix, labelOf, MAX_LABEL_CHARS, oneLine, withoutControls } from '../../src/core/text.ts';

// Text from sources is an attacker's: every rule is tried on what a hostile page, site or file can send.

const TEN_MB = 10 * 1024 * 1024;
const C0 = Array.from({ length: 0x20 }, (_, code) => String.fromCharCode(code)).join('');
const C1 = Array.from({ length: 0x20 }, (_, code) => String.fromCharCode(0x80 + code)).join('');
const BIDI = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069';
const FAMILY = '👨‍👩‍👧';
const FLAG = '🇫🇷';
const SCOTLAND = '🏴󠁧󠁢󠁳󠁣󠁴󠁿';
const COMBINED = 'e\u0301 Z\u0351\u0311\u0300';

describe('withoutControls (a text of several lines)', () => {
  test('when a text holds NUL, C0 and C1 controls and DEL, then they are removed and tab, line feed and carriage return stay', () => {
    expect(withoutControls(`a${C0}b\u007fc${C1}d`)).toBe('a\t\n\rbcd');
    expect(withoutControls('first \u0000 one \u001b[31mred\r\nnext\tcue\n')).toBe('first  one [31mred\r\nnext\tcue\n');
  });

  test('when a text holds bidi embeddings, overrides and isolates, then they are removed and direction marks stay', () => {
    expect(withoutControls(`clip${BIDI}4pm.exe`)).toBe('clip4pm.exe');
    expect(withoutControls('\u05e9\u05dc\u05d5\u05dd\u200f!\u200e\u061c')).toBe('\u05e9\u05dc\u05d5\u05dd\u200f!\u200e\u061c');
  });

  test('when a text holds lone high and low surrogates, then each becomes U+FFFD and whole pairs stay', () => {
    expect(withoutControls('a\ud800b\udc00c')).toBe('a\ufffdb\ufffdc');
    expect(withoutControls('\udc00\ud800')).toBe('\ufffd\ufffd');
    expect(withoutControls('end\ud83d')).toBe('end\ufffd');
    expect(withoutControls('😀\ud83d\ude00')).toBe('😀😀');
  });

  test('when a text holds emoji sequences, combining marks and separators of lines, then they stay as they are', () => {
    const text = `${FAMILY} ${FLAG} ${SCOTLAND} 👍🏽 ${COMBINED}\u2028second\u2029\ufeff`;
    expect(withoutControls(text)).toBe(text);
  });
});

describe('oneLine', () => {
  test('when a line holds C0, DEL and C1 controls inside a word, then they are removed', () => {
    expect(oneLine('Eng\u0000li\u0007s\u007fh\u009b\u0080', 50)).toBe('English');
  });

  test('when a line holds tabs, line breaks, NEL and the line and paragraph separators, then each run becomes one space', () => {
    expect(oneLine('a\r\n\tb\u2028c\u2029d\u0085e\u000b\u000cf', 50)).toBe('a b c d e f');
    expect(oneLine('a\u2028\u2029\n b', 50)).toBe('a b');
  });

  test('when a line has runs of white space and spaces at its ends, then each run is one space and the ends are trimmed', () => {
    expect(oneLine('  a   \u00a0 b \u3000 c  ', 50)).toBe('a b c');
  });

  test('when a line holds bidi overrides and isolates, then they are removed without leaving a space', () => {
    expect(oneLine(`pa${BIDI}ss\u202ewd`, 50)).toBe('passwd');
  });

  test('when a line holds lone surrogates, then each becomes U+FFFD', () => {
    expect(oneLine('half\ud800pair\udfff', 50)).toBe('half\ufffdpair\ufffd');
  });

  test('when a line is longer than its bound, then it is cut to that many code points', () => {
    expect(oneLine('abcdefgh', 5)).toBe('abcde');
    expect(oneLine('😀'.repeat(10), 3)).toBe('😀😀😀');
  });

  test('when a surrogate pair sits at the cut point, then the pair is kept or left whole, never halved', () => {
    expect(oneLine('ab😀c', 3)).toBe('ab😀');
    expect(oneLine('abc😀', 3)).toBe('abc');
  });

  test('when the cut falls after a space, then the line ends without it', () => {
    expect(oneLine('ab \u0001 cd', 3)).toBe('ab');
  });

  test('when a line is only controls, overrides and spaces, then nothing is left', () => {
    expect(oneLine(`${C0}${C1}\u007f${BIDI} \u2028\u2029`, 50)).toBe('');
    expect(oneLine('', 50)).toBe('');
  });

  test('when a line holds emoji sequences and combining marks, then they stay', () => {
    const text = `${FAMILY} ${FLAG} ${SCOTLAND} 👍🏽 ${COMBINED}`;
    expect(oneLine(text, 200)).toBe(text);
  });
});

describe('boundedPrefix', () => {
  test('when a text is longer than a bound reads, then the prefix is eight UTF-16 units per code point kept', () => {
    expect(boundedPrefix('a'.repeat(100), 2)).toBe('a'.repeat(16));
    expect(boundedPrefix('short', 2)).toBe('short');
  });

  test('when the prefix would end inside a surrogate pair, then it ends before the pair', () => {
    expect(boundedPrefix(`${'a'.repeat(7)}😀b`, 1)).toBe('a'.repeat(7));
    // Had the half been kept, the cleaning would have made it U+FFFD.
    expect(oneLine(`${'\u0000'.repeat(7)}😀x`, 1)).toBe('');
  });
});

describe('labelOf', () => {
  test('when a label is missing, empty, or only controls and spaces, then it is null', () => {
    expect(labelOf(undefined)).toBeNull();
    expect(labelOf(null)).toBeNull();
    expect(labelOf('')).toBeNull();
    expect(labelOf(' \u0000\u202e\t\u0085 ')).toBeNull();
  });

  test('when a label holds controls, overrides and line breaks, then it is one clean line', () => {
    expect(labelOf('\u0000Eng\u0007lish\u202e\r\n(SDH)\u2069')).toBe('English (SDH)');
  });

  test('when a label is longer than MAX_LABEL_CHARS code points, then it is cut there; another bound may be asked', () => {
    expect(labelOf('😀'.repeat(MAX_LABEL_CHARS + 50))).toBe('😀'.repeat(MAX_LABEL_CHARS));
    expect(labelOf('x'.repeat(600), 500)).toBe('x'.repeat(500));
  });

  test('when a label is 10 MB long, then it is cut to MAX_LABEL_CHARS code points', () => {
    expect(labelOf('Subtitle '.repeat(TEN_MB / 9))).toBe(`${'Subtitle '.repeat(22)}Su`);
    expect(labelOf('😀'.repeat(TEN_MB / 2))).toBe('😀'.repeat(MAX_LABEL_CHARS));
  });

  test('when a 10 MB label is controls and spaces before its words, then only a bounded prefix is read and nothing is left', () => {
    // Read whole, this would be "tail": the rule never reads past the prefix a label's bound needs.
    expect(labelOf(`${'\u0001 '.repeat(TEN_MB / 2)}tail`)).toBeNull();
    expect(labelOf(`${'\u0001'.repeat(8 * MAX_LABEL_CHARS - 4)}tail`)).toBe('tail');
  });
});

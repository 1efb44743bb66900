import { InvalidDownloadRequest } from '../../src/downloads/create-rules.ts';
import { formatArchive, parseArchive } from '../../src/subscriptions/archive.ts';

// yt-dlp's --download-archive text, as a subscription imports and exports it: `<extractor> <id>`
// lines, the extractor lower-cased; comments and blank lines skipped; anything else refused with
// the line named.

function refusal(text: string): InvalidDownloadRequest {
  try {
    parseArchive(text);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidDownloadRequest);
    return error as InvalidDownloadRequest;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be refused`);
}

describe('parse', () => {
  test('when the text is lines of "<extractor> <id>", then each is an archived entry, the extractor lower-cased and the id as written', () => {
    expect(parseArchive('youtube dQw4w9WgXcQ\nFeed Episode-41\n')).toEqual([
      { key: 'youtube dQw4w9WgXcQ', archived: true },
      { key: 'feed Episode-41', archived: true },
    ]);
  });

  test('when there are comments, blank lines, spaces around lines and CRLF line ends, then only the entries are read', () => {
    const text = '# exported by yt-dlp\r\n\r\n  youtube abc  \r\n   \r\n#youtube commented\r\nvimeo 12345\r\n';
    expect(parseArchive(text)).toEqual([
      { key: 'youtube abc', archived: true },
      { key: 'vimeo 12345', archived: true },
    ]);
  });

  test('when the text is empty or only comments, then there are no entries', () => {
    expect(parseArchive('')).toEqual([]);
    expect(parseArchive('# nothing\n\n')).toEqual([]);
  });

  test('when an id holds a space, then the rest of the line after the first space is the id', () => {
    expect(parseArchive('feed an id with spaces')).toEqual([{ key: 'feed an id with spaces', archived: true }]);
  });

  test('when the extractor is 100 characters and the id 500, the longest taken, counted in code points, then the line is read', () => {
    const line = `${'\u{1F3B5}'.repeat(100)} ${'\u{1F3B6}'.repeat(500)}`;
    expect(parseArchive(line)).toEqual([{ key: line, archived: true }]);
  });

  test('when the last line has no line end, then it is read too', () => {
    expect(parseArchive('youtube a\nyoutube b')).toHaveLength(2);
  });

  test.each([
    ['a line with no id', 'youtube a\njustoneword\n', 2],
    ['a line of an extractor and a space only', 'youtube \n', 1],
    ['two spaces between extractor and id', 'youtube a\nyoutube b\nyoutube  c\n', 3],
    ['a tab instead of the space', 'youtube\tabc\n', 1],
    ['a control character in the id', 'youtube ab\u0007c\n', 1],
    ['a NUL in the id', 'feed ok\nfeed a\u0000b\n', 2],
    ['a bare carriage return inside a line', 'youtube a\rvimeo b\n', 1],
    // No listed entry has a longer id (MAX_ENTRY_TEXT_CHARS), and a key that long is more than the database can index.
    ['an id of 501 characters', `youtube ok\nyoutube ${'a'.repeat(501)}\n`, 2],
    ['an extractor of 101 characters', `${'x'.repeat(101)} abc\n`, 1],
  ])('when the text has %s, then it is refused naming /body/archive and the line', (_, text, line) => {
    const error = refusal(text);
    expect(error.field).toBe('/body/archive');
    expect(error.reason).toContain(`line ${line} `);
  });
});

describe('format', () => {
  test('when keys are formatted, then each is one line ending in a newline, in the order given', () => {
    expect(formatArchive(['youtube b', 'feed a'])).toBe('youtube b\nfeed a\n');
  });

  test('when there are no keys, then the archive is empty text', () => {
    expect(formatArchive([])).toBe('');
  });

  test('when an archive is parsed and its keys formatted, then the text is the same entries, normalised, and reads back to the same', () => {
    const parsed = parseArchive('# mine\r\nYouTube abc\r\n\r\nfeed ep 1\r\n');
    const text = formatArchive(parsed.map((entry) => entry.key));
    expect(text).toBe('youtube abc\nfeed ep 1\n');
    expect(parseArchive(text)).toEqual(parsed);
  });
});

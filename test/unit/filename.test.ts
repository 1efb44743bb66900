import { cleanFileName, fileNameFor } from '../../src/downloads/filename.ts';
import { dispositionName } from '../../src/sources/direct/disposition.ts';

// A name a user will see in a file manager or a browser's download bar: nothing in it may change
// how the rest of it is shown.

describe('cleanFileName', () => {
  test.each([
    ['a zero width space', '\u200b'],
    ['a left-to-right mark', '\u200e'],
    ['a right-to-left mark', '\u200f'],
    ['a left-to-right embedding', '\u202a'],
    ['a right-to-left override', '\u202e'],
    ['a word joiner', '\u2060'],
    ['a left-to-right isolate', '\u2066'],
    ['a pop directional isolate', '\u2069'],
    ['a byte order mark', '\ufeff'],
    ['a soft hyphen', '\u00ad'],
    ['an Arabic letter mark', '\u061c'],
    ['a language tag', '\u{e0001}'],
  ])('when the name holds %s, then it is removed', (_name, char) => {
    expect(cleanFileName(`clip${char}4pm${char}.exe`)).toBe('clip4pm.exe');
  });

  test('when the name is nothing but format characters, then nothing is left', () => {
    expect(cleanFileName('\u202e\u200b\ufeff')).toBe('');
  });

  test('when a long name is cut, then it is cut in UTF-8 bytes (180) and never inside a character or an emoji', () => {
    const accented = cleanFileName('é'.repeat(300));
    expect(Buffer.byteLength(accented)).toBe(180);
    // 1 + 44 four-byte emoji: a 45th would pass 180 bytes, and half of one is never kept.
    expect(cleanFileName(`a${'🎬'.repeat(100)}`)).toBe(`a${'🎬'.repeat(44)}`);
  });

  test('when the name holds C0 and C1 controls, then a line break is a space and any other control is removed', () => {
    expect(cleanFileName('pa\u0000ss\u009bwd\r\n\u0085notes')).toBe('passwd notes');
  });

  test('when the name is 10 MB long, then it is cut to 180 bytes; 10 MB of format characters leave nothing', () => {
    expect(cleanFileName('é'.repeat(5 * 1024 * 1024))).toBe('é'.repeat(90));
    expect(cleanFileName(`${'\u200b'.repeat(10 * 1024 * 1024)}name`)).toBe('');
  });

  test('when the name holds emoji sequences made with zero width joiners or tag characters, then they stay whole', () => {
    // A family, a rainbow flag, a technologist with a skin tone, the flag of Scotland: without their
    // joiners and tags they would show as other emoji (three people, a white flag and a rainbow, a black flag).
    const name = 'Family 👨‍👩‍👧 🏳️‍🌈 👩🏽‍💻 🏴󠁧󠁢󠁳󠁣󠁴󠁿';
    expect(cleanFileName(name)).toBe(name);
  });

  test('when a zero width joiner or a tag character is outside an emoji sequence, then it is still removed', () => {
    expect(cleanFileName('pa\u200dss 🎬\u200d.exe \u{e0041}x')).toBe('pass 🎬.exe x');
  });

  test('when the name has letters of any script and emoji, then they stay', () => {
    expect(cleanFileName('Vidéo 動画 видео 🎬')).toBe('Vidéo 動画 видео 🎬');
  });
});

describe('fileNameFor', () => {
  test('when a page title hides its extension behind a right-to-left override, then the override is gone and the real extension shows', () => {
    const name = fileNameFor('../../etc/pa\0ss\r\nwd\u202e4pm.exe', 'https://media.example.com/watch/42', 'mp4');
    expect(name).not.toMatch(/[\p{Cc}\p{Cf}/\\]/u);
    expect(name).toMatch(/ wd4pm\.exe\.mp4$/);
    // What was "../../" is neither a path nor a name starting with dots.
    expect(name).toMatch(/^etc /);
  });
});

describe('dispositionName', () => {
  test.each([
    ['a quoted filename', 'attachment; filename="Holiday clip.mp4"', 'Holiday clip'],
    ['filename* in UTF-8, which wins over filename', `attachment; filename="video.mp4"; filename*=UTF-8''v%C3%ADdeo%20%E5%8B%95%E7%94%BB.mp4`, 'vídeo 動画'],
    ['a token filename without extension', 'inline; filename=clip', 'clip'],
  ])('when a source sends %s, then its name without the extension names the file', (_what, header, name) => {
    expect(dispositionName(header)).toBe(name);
  });

  test.each([
    ['no header', undefined],
    ['no filename', 'attachment'],
    ['an empty filename', 'attachment; filename=""'],
    ['a header that does not parse', 'attachment; filename="unterminated'],
    ['only an extension', 'attachment; filename=".mp4"'],
  ])('when a source sends %s, then it gives no name', (_what, header) => {
    expect(dispositionName(header)).toBeNull();
  });

  test('when the name tries to climb out of its folder, then the file name keeps none of its separators', () => {
    const name = dispositionName('attachment; filename="../../etc/passwd.mp4"');
    expect(fileNameFor(name, 'http://example.com/x.mp4', 'mp4')).toBe('etc passwd.mp4');
  });
});

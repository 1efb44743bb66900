import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { page } from './support/html-pages.ts';
import { mediaPath } from './support/media.ts';
import { downloadToEnd } from './support/outcomes.ts';

// Text a source writes that reaches the Download by other ways than a title or a label: the words
// of a failure (error.message) that quote a playlist or a header, and a subtitle label as the file
// holds it. Each must follow the text rules (core/text.ts): no control characters, no direction
// overrides, bounded, never a character cut in half; and a failure must still be recorded.

const { app, source } = useService({ maxAttempts: 1 });

/** What no text the API hands out may hold: C0 and C1 controls, DEL, bidi embeddings, overrides and isolates, and U+FFFD left by a cut. */
const UNCLEAN = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\ufffd]/;
/** Far more than any message the service writes of its own. */
const MAX_MESSAGE_CHARS = 2000;

const HOSTILE = 'x\u0000y\u001b[2J\u0007\u009b31m\u0085\u202egpj.exe\u2066';

function expectCleanFailure(done: Download, code: string): void {
  expect(done).toMatchObject({ status: 'failed', error: { code } });
  const message = done.error!.message;
  expect(message).not.toMatch(UNCLEAN);
  expect(Array.from(message).length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
}

describe('failures that quote a source', () => {
  test('when an HLS key names a METHOD full of NUL, escapes, C1 controls, an override and 200 000 characters, then the download fails as drm_protected with a clean, bounded message', async () => {
    const playlist = [
      '#EXTM3U',
      '#EXT-X-VERSION:3',
      '#EXT-X-TARGETDURATION:2',
      `#EXT-X-KEY:METHOD=SAMPLE-AES${HOSTILE}${'A'.repeat(200_000)},URI="key.bin"`,
      '#EXTINF:2.0,',
      'segment0.ts',
      '#EXT-X-ENDLIST',
      '',
    ].join('\n');
    const url = source.content('/hostile-text/method.m3u8', playlist, { contentType: 'application/vnd.apple.mpegurl' });
    const done = await downloadToEnd(app, { url });
    expectCleanFailure(done, 'drm_protected');
  });

  test('when an HLS segment URI is no URL and holds NUL, escapes, C1 controls and an override, then the download fails as unsupported_source with a clean message', async () => {
    const playlist = [
      '#EXTM3U',
      '#EXT-X-VERSION:3',
      '#EXT-X-TARGETDURATION:2',
      '#EXTINF:2.0,',
      `http://[${HOSTILE}]:99999999/segment0.ts`,
      '#EXT-X-ENDLIST',
      '',
    ].join('\n');
    const url = source.content('/hostile-text/uri.m3u8', playlist, { contentType: 'application/vnd.apple.mpegurl' });
    const done = await downloadToEnd(app, { url });
    expectCleanFailure(done, 'unsupported_source');
  });

  test('when a redirect names no URL and its Location holds C1 controls, then the download fails with a message without them', async () => {
    // A header is read as Latin-1: its bytes 0x80-0x9F are the C1 controls (0x9B is CSI, which starts a terminal's escape).
    const url = source.route('/hostile-text/redirect', (_req, res) => {
      res.writeHead(302, { Location: 'http://[\u009b2J\u009b31m\u0085\u0090x' });
      res.end();
    });
    const done = await downloadToEnd(app, { url });
    expectCleanFailure(done, 'source_http_error');
  });
});

describe('a subtitle label as the file holds it', () => {
  test.each([
    ['150 two-byte characters (300 bytes in UTF-8)', 'é'.repeat(150)],
    ['100 emoji (400 bytes in UTF-8)', '🎬'.repeat(100)],
  ])('when a track label is %s, within the 200 a label keeps, then file.subtitles shows it whole, never cut inside a character', async (_what, label) => {
    const prefix = `/hostile-text/label-${Buffer.byteLength(label)}`;
    const media = source.file(`${prefix}/clip.mp4`, mediaPath('clip.mp4'));
    source.content(`${prefix}/en.vtt`, 'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nhello\n', { contentType: 'text/vtt' });
    const html = page('<title>Labelled</title>', `<video src="${media}"><track srclang="en" label="${label}" src="en.vtt"></video>`);
    const done = await downloadToEnd(app, { url: source.content(`${prefix}/watch.html`, html), subtitles: ['en'] });
    expect(done.status).toBe('completed');
    expect(done.file!.subtitles).toEqual([{ language: 'eng', label }]);
  });
});

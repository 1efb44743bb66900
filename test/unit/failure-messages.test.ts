import { DownloadError } from '../../src/core/errors.ts';
import { resolveUri } from '../../src/sources/hls/urls.ts';
import { refuseDrm } from '../../src/sources/hls/keys.ts';

// A failure's message is the Download's error.message: shown by the API, the web page, webhooks and
// the vds command (in a terminal), and written to the database. What it quotes of a source (a
// playlist's attribute or URI) is hostile text, held to the rules of one line (core/text.ts).

const HOSTILE = 'x\u0000y\u001b[2J\u0007\u009b31m\u0085\u202egpj.exe\u2066\u2028';
const UNCLEAN = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

function thrown(run: () => unknown): DownloadError {
  try {
    run();
  } catch (error) {
    if (error instanceof DownloadError) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('failure messages that quote a source', () => {
  test('when an HLS key names a METHOD full of controls, escapes and an override, then the message keeps none of them', () => {
    const error = thrown(() => refuseDrm({ method: `SAMPLE-AES${HOSTILE}` }));
    expect(error.code).toBe('drm_protected');
    expect(error.message).not.toMatch(UNCLEAN);
    expect(error.message).toContain('SAMPLE-AESxy[2J31m');
  });

  test('when an HLS key names a METHOD of a million characters, then the message is bounded', () => {
    const error = thrown(() => refuseDrm({ method: 'A'.repeat(1_000_000) }));
    expect(Array.from(error.message).length).toBeLessThanOrEqual(2000);
  });

  test('when an HLS URI is no URL and holds controls and an override, then the message keeps none of them', () => {
    const error = thrown(() => resolveUri(`http://[${HOSTILE}]/segment.ts`, 'https://media.example.com/list.m3u8'));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).not.toMatch(UNCLEAN);
  });
});

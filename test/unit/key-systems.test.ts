import { DownloadError } from '../../src/core/errors.ts';
import { planDash } from '../../src/sources/dash/index.ts';
import { readHlsPlaylist } from '../../src/sources/hls/read-playlist.ts';
import { KEY_SYSTEMS } from '../../src/sources/key-systems.ts';

// A DRM system named by both formats must be named alike in both refusals: the table is one.

function refusal(read: () => unknown): DownloadError {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(DownloadError);
    return error as DownloadError;
  }
  throw new Error('the stream was not refused');
}

function hlsRefusal(keyFormat: string): DownloadError {
  const text = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="key.bin",KEYFORMAT="${keyFormat}"\n#EXTINF:1,\nseg0.ts\n#EXT-X-ENDLIST\n`;
  return refusal(() => readHlsPlaylist({ text, url: 'http://127.0.0.1:9/index.m3u8', quality: 'best', expect: 'any', maxSegments: 1000 }));
}

function dashRefusal(schemeIdUri: string): DownloadError {
  const text =
    '<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"><Period>' +
    `<AdaptationSet contentType="video" mimeType="video/mp4"><ContentProtection schemeIdUri="${schemeIdUri}"/>` +
    '<Representation id="v" bandwidth="100000" height="240"><BaseURL>v.mp4</BaseURL></Representation></AdaptationSet>' +
    '</Period></MPD>';
  return refusal(() => planDash({ url: 'http://127.0.0.1:9/manifest.mpd', text, quality: 'best', maxSegments: 1000 }));
}

describe('DRM key systems', () => {
  test.each(
    Object.entries(KEY_SYSTEMS).flatMap(([identifier, name]) => [
      [identifier, name],
      [identifier.toUpperCase(), name],
    ]),
  )('when a stream is protected by %s, then HLS and DASH both refuse it as drm_protected and name it %s', (identifier, name) => {
    const hls = hlsRefusal(identifier);
    const dash = dashRefusal(identifier);
    expect([hls.code, dash.code]).toEqual(['drm_protected', 'drm_protected']);
    expect(hls.message).toContain(`protected by ${name} (KEYFORMAT="${identifier}")`);
    expect(dash.message).toContain(`DRM-protected (${name})`);
  });

  test('when a stream names a key system that is not known, then both refuse it and name what it said', () => {
    const identifier = 'urn:uuid:00000000-0000-0000-0000-000000000000';
    expect(hlsRefusal(identifier).message).toContain(`protected by DRM (KEYFORMAT="${identifier}")`);
    expect(dashRefusal(identifier).message).toContain(`DRM-protected (${identifier})`);
  });
});

import { extract } from '../src/sources/site/ytdlp.ts';
import { failure, useYtDlpSite } from './support/ytdlp-site.ts';

// What the service makes of yt-dlp's failures: stand-ins print what yt-dlp printed, and the error
// code and reason the extraction ends with are checked.

const { proxy, options, cannedYtDlp } = useYtDlpSite();

// The ERROR lines yt-dlp 2023.03.04 printed in these cases (the research runs behind this file).
const ERROR_LINES: [string, string, { code: string; retryable: boolean }][] = [
  ['a page with no media', 'ERROR: Unsupported URL: http://127.0.0.1:18731/nomedia.html', { code: 'unsupported_source', retryable: false }],
  ['no dedicated extractor', 'ERROR: No suitable extractor found for URL http://127.0.0.1:18731/jw.html', { code: 'unsupported_source', retryable: false }],
  [
    'a 404',
    "ERROR: [generic] None: Unable to download webpage: HTTP Error 404: Not Found (caused by <HTTPError 404: 'Not Found'>); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_http_error', retryable: false },
  ],
  [
    'a 503',
    "ERROR: [generic] None: Unable to download webpage: HTTP Error 503: Service Unavailable (caused by <HTTPError 503: 'Service Unavailable'>); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_http_error', retryable: true },
  ],
  [
    'a refused connection',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error [Errno 111] Connection refused> (caused by URLError(ConnectionRefusedError(111, 'Connection refused')))",
    { code: 'source_unreachable', retryable: true },
  ],
  [
    'a CONNECT the proxy refused',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 403 Forbidden> (caused by URLError(OSError('Tunnel connection failed: 403 Forbidden')))",
    { code: 'blocked_address', retryable: false },
  ],
  [
    'a CONNECT the proxy could not dial',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 502 Bad Gateway> (caused by URLError(OSError('Tunnel connection failed: 502 Bad Gateway')))",
    { code: 'source_unreachable', retryable: true },
  ],
  [
    'a CONNECT without the credential',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error Tunnel connection failed: 407 Proxy Authentication Required> (caused by URLError(OSError('Tunnel connection failed: 407 Proxy Authentication Required')))",
    { code: 'internal_error', retryable: true },
  ],
  ['a DRM-protected stream', 'ERROR: [generic] media: This video is DRM protected', { code: 'drm_protected', retryable: false }],
  [
    "yt-dlp's own socket timeout",
    "ERROR: [generic] None: Unable to download webpage: timed out (caused by TimeoutError('timed out')); please report this issue on  https://github.com/yt-dlp/yt-dlp/issues?q= , filling out the appropriate issue template. Confirm you are on the latest version using  yt-dlp -U",
    { code: 'source_timeout', retryable: true },
  ],
  [
    'a TLS failure',
    "ERROR: [generic] None: Unable to download webpage: <urlopen error [SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)> (caused by URLError(SSLError(1, '[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)')))",
    { code: 'source_unreachable', retryable: false },
  ],
  [
    'an unsupported URL whose path says DRM',
    'ERROR: Unsupported URL: http://127.0.0.1/DRM-protected/HTTP%20Error%20500',
    { code: 'unsupported_source', retryable: false },
  ],
  ['anything else', 'ERROR: [youtube] abc: Video unavailable', { code: 'unsupported_source', retryable: false }],
];

describe("reading yt-dlp's failures", () => {
  test.each(ERROR_LINES)('when yt-dlp reports %s, then the right code', async (_case, line, expected) => {
    const fake = await cannedYtDlp('', `WARNING: [generic] Falling back on generic information extractor\n${line}\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error).toMatchObject(expected);
    expect(error.message).not.toContain('please report');
    expect(error.message).not.toContain('ERROR:');
  });

  test('when the ERROR line carries escapes, controls, the proxy credential and a lot of text, then the reason is short and clean', async () => {
    const { username, password } = new URL(proxy.url);
    const line = `\x1b[0;31mERROR:\x1b[0m [generic] x: \u202eUnable\x07 to open ${proxy.url} as ${username}:${password} (${Buffer.from(`${username}:${password}`).toString('base64')}) ${'very long '.repeat(100)}`;
    const fake = await cannedYtDlp('', `${line}\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(error.message).not.toContain(password);
    expect(error.message).not.toContain(new URL(proxy.url).host);
    expect(error.message).toContain('Unable to open');
    expect(error.message.length).toBeLessThan(300);
  });

  test("when the ERROR line names another port that starts with the proxy's, then that one stays", async () => {
    const { host } = new URL(proxy.url);
    const fake = await cannedYtDlp('', `ERROR: Unsupported URL: http://${host}7/page and http://${host}/\n`, 1);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error.message).toContain(`http://${host}7/page and [proxy]/`);
  });

  test('when yt-dlp says the page is a live stream, then unsupported_source', async () => {
    const fake = await cannedYtDlp(JSON.stringify({ _type: 'video', is_live: true, url: 'http://127.0.0.1/live.m3u8', protocol: 'm3u8_native' }), '', 0);
    const error = await failure(extract(fake, options('http://127.0.0.1/page')));
    expect(error).toMatchObject({ code: 'unsupported_source' });
    expect(error.message).toContain('live streams are not downloaded');
  });

  test('when yt-dlp answers something other than JSON, then unsupported_source', async () => {
    const fake = await cannedYtDlp('<html>not json', '', 0);
    expect(await failure(extract(fake, options('http://127.0.0.1/page')))).toMatchObject({ code: 'unsupported_source' });
  });
});

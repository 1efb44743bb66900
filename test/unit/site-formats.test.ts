import { chooseFormats, safeHeaders } from '../../src/sources/site/formats.ts';
import { siteInfoOf } from '../../src/sources/site/ytdlp.ts';

// Which of the formats yt-dlp lists the service fetches, and which of their headers it sends.

// Trimmed from what yt-dlp 2023.03.04 printed for the pages of the research runs; `youtubeLike` is
// shaped as a dedicated extractor's answer (separate https video and audio, a storyboard, one muxed).
const headers = {
  'User-Agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/95.0.4638.17 Safari/537.36',
  Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'Accept-Language': 'en-us,en;q=0.5',
  'Sec-Fetch-Mode': 'navigate',
};
const gv = (itag: string) => `https://rr1---sn-example.googlevideo.com/videoplayback?itag=${itag}&expire=1795652282`;
const youtubeLike = {
  id: 'BaW_jenozKc',
  title: 'A talk',
  formats: [
    {
      format_id: 'sb0',
      format_note: 'storyboard',
      ext: 'mhtml',
      protocol: 'mhtml',
      acodec: 'none',
      vcodec: 'none',
      url: 'https://i.ytimg.com/sb/x/M$M.jpg',
      width: 160,
      height: 90,
      fps: 0.5,
      rows: 5,
      columns: 5,
      fragments: [{ url: 'https://i.ytimg.com/sb/x/M0.jpg', duration: 10 }],
    },
    {
      format_id: '139',
      format_note: 'low',
      acodec: 'mp4a.40.5',
      vcodec: 'none',
      url: gv('139'),
      ext: 'm4a',
      protocol: 'https',
      tbr: 48.6,
      filesize: 61_000,
      asr: 22050,
      audio_channels: 2,
      http_headers: headers,
    },
    {
      format_id: '140',
      format_note: 'medium',
      acodec: 'mp4a.40.2',
      vcodec: 'none',
      url: gv('140'),
      ext: 'm4a',
      protocol: 'https',
      tbr: 129.5,
      filesize: 162_000,
      asr: 44100,
      audio_channels: 2,
      http_headers: headers,
    },
    {
      format_id: '134',
      format_note: '360p',
      acodec: 'none',
      vcodec: 'avc1.4d401e',
      url: gv('134'),
      ext: 'mp4',
      protocol: 'https',
      width: 640,
      height: 360,
      tbr: 310.2,
      http_headers: headers,
    },
    {
      format_id: '18',
      format_note: '360p',
      acodec: 'mp4a.40.2',
      vcodec: 'avc1.42001E',
      url: gv('18'),
      ext: 'mp4',
      protocol: 'https',
      width: 640,
      height: 360,
      tbr: 505.1,
      http_headers: headers,
    },
    {
      format_id: '136',
      format_note: '720p',
      acodec: 'none',
      vcodec: 'avc1.4d401f',
      url: gv('136'),
      ext: 'mp4',
      protocol: 'https',
      width: 1280,
      height: 720,
      tbr: 1212.4,
      http_headers: headers,
    },
    {
      format_id: '247',
      format_note: '720p',
      acodec: 'none',
      vcodec: 'vp9',
      url: gv('247'),
      ext: 'webm',
      protocol: 'https',
      width: 1280,
      height: 720,
      tbr: 1509.9,
      http_headers: headers,
    },
    {
      format_id: '137',
      format_note: '1080p',
      acodec: 'none',
      vcodec: 'avc1.640028',
      url: gv('137'),
      ext: 'mp4',
      protocol: 'https',
      width: 1920,
      height: 1080,
      tbr: 4022.0,
      http_headers: headers,
    },
  ],
  extractor: 'youtube',
  extractor_key: 'Youtube',
  _type: 'video',
};

const base = 'http://127.0.0.1:18731/master';
const hlsWithAudio = {
  id: 'master',
  title: 'master',
  formats: [
    {
      format_id: 'group_aud-audio_2',
      format_note: 'audio_2',
      format_index: null,
      url: `${base}/vaudio.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      language: null,
      ext: 'mp4',
      protocol: 'm3u8_native',
      preference: null,
      quality: null,
      has_drm: null,
      vcodec: 'none',
      resolution: 'audio only',
      http_headers: headers,
    },
    {
      format_id: '180',
      format_index: null,
      url: `${base}/v1.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      tbr: 180.4,
      ext: 'mp4',
      fps: null,
      protocol: 'm3u8_native',
      has_drm: null,
      width: 160,
      height: 120,
      vcodec: 'avc1.f4000b',
      acodec: 'none',
      http_headers: headers,
    },
    {
      format_id: '400',
      format_index: null,
      url: `${base}/v0.m3u8`,
      manifest_url: `${base}/master.m3u8`,
      tbr: 400.4,
      ext: 'mp4',
      fps: null,
      protocol: 'm3u8_native',
      has_drm: null,
      width: 320,
      height: 240,
      vcodec: 'avc1.f4000d',
      acodec: 'none',
      http_headers: headers,
    },
  ],
  extractor: 'generic',
  extractor_key: 'Generic',
  _type: 'video',
};

const hlsMuxed = {
  title: 'muxed',
  formats: [
    {
      format_id: '640',
      url: `${base}/v1.m3u8`,
      manifest_url: `${base}/muxed.m3u8`,
      tbr: 640.0,
      ext: 'mp4',
      protocol: 'm3u8_native',
      has_drm: null,
      width: 640,
      height: 360,
      vcodec: 'avc1.4d401e',
      acodec: 'mp4a.40.2',
      abr: 0.0,
    },
    {
      format_id: '1280',
      url: `${base}/v0.m3u8`,
      manifest_url: `${base}/muxed.m3u8`,
      tbr: 1280.0,
      ext: 'mp4',
      protocol: 'm3u8_native',
      has_drm: null,
      width: 1280,
      height: 720,
      vcodec: 'avc1.64001f',
      acodec: 'mp4a.40.2',
      abr: 0.0,
    },
  ],
  extractor_key: 'Generic',
  _type: 'video',
};

const mpd = 'http://127.0.0.1:18731/dash/manifest.mpd';
const dash = {
  title: 'manifest',
  formats: [
    {
      format_id: '2',
      manifest_url: mpd,
      ext: 'm4a',
      width: null,
      height: null,
      tbr: 69.0,
      asr: 44100,
      format_note: 'DASH audio',
      container: 'm4a_dash',
      vcodec: 'none',
      acodec: 'mp4a.40.2',
      url: mpd,
      fragment_base_url: 'http://127.0.0.1:18731/dash/',
      fragments: [{ path: 'init-stream2.m4s' }],
      protocol: 'http_dash_segments',
      manifest_stream_number: 2,
    },
    {
      format_id: '1',
      manifest_url: mpd,
      ext: 'mp4',
      width: 160,
      height: 120,
      tbr: 100.0,
      format_note: 'DASH video',
      container: 'mp4_dash',
      vcodec: 'avc1.f4000b',
      acodec: 'none',
      url: mpd,
      fragments: [{ path: 'init-stream1.m4s' }],
      protocol: 'http_dash_segments',
    },
    {
      format_id: '0',
      manifest_url: mpd,
      ext: 'mp4',
      width: 320,
      height: 240,
      tbr: 300.0,
      format_note: 'DASH video',
      container: 'mp4_dash',
      vcodec: 'avc1.f4000d',
      acodec: 'none',
      url: mpd,
      fragments: [{ path: 'init-stream0.m4s' }],
      protocol: 'http_dash_segments',
    },
  ],
  extractor_key: 'Generic',
  _type: 'video',
};

/** A `twitter:player:stream` page: one file, no `formats` list. */
const single = {
  id: 'clip',
  title: 'TW',
  http_headers: { ...headers, Referer: 'http://127.0.0.1:18731/twstream.html' },
  url: 'http://127.0.0.1:18731/clip.mp4',
  extractor: 'generic',
  extractor_key: 'Generic',
  ext: 'mp4',
  protocol: 'http',
  resolution: null,
  format_id: '0',
  _type: 'video',
};

const withFormats = (info: { formats: object[] }, formats: object[]) => siteInfoOf({ ...info, formats });

describe('choosing among the formats', () => {
  test('when the site has separate video and audio, then best is the tallest picture with the best audio', () => {
    const choice = chooseFormats(siteInfoOf(youtubeLike), 'best');
    expect(choice).toMatchObject({
      kind: 'direct',
      video: { format_id: '137', height: 1080, url: gv('137'), ext: 'mp4' },
      audio: { format_id: '140', ext: 'm4a' },
    });
    expect(choice.muxed).toBeUndefined();
    expect(choice.video!.headers).toEqual({ 'User-Agent': headers['User-Agent'], Accept: headers.Accept, 'Accept-Language': headers['Accept-Language'] });
  });

  test('when a height is asked, then the best picture no taller, the higher bitrate among equals', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 720)).toMatchObject({ video: { format_id: '247' }, audio: { format_id: '140' } });
    expect(chooseFormats(siteInfoOf(youtubeLike), 480)).toMatchObject({ muxed: { format_id: '18' } });
  });

  test('when no picture is as small as asked, then the smallest there is, never a storyboard', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 100)).toMatchObject({ video: { format_id: '134', height: 360 } });
  });

  test('when worst is asked, then the smallest picture and the smallest audio', () => {
    expect(chooseFormats(siteInfoOf(youtubeLike), 'worst')).toMatchObject({ video: { format_id: '134' }, audio: { format_id: '139' } });
  });

  test('when HLS variants have a separate audio rendition, then a variant playlist and the audio one, with their master', () => {
    expect(chooseFormats(siteInfoOf(hlsWithAudio), 'best')).toMatchObject({
      kind: 'hls',
      video: { kind: 'hls', url: `${base}/v0.m3u8`, manifest_url: `${base}/master.m3u8`, height: 240, format_id: '400' },
      audio: { kind: 'hls', url: `${base}/vaudio.m3u8`, manifest_url: `${base}/master.m3u8` },
    });
    expect(chooseFormats(siteInfoOf(hlsWithAudio), 120)).toMatchObject({ video: { format_id: '180' } });
  });

  test('when HLS variants carry their own sound, then one muxed variant', () => {
    expect(chooseFormats(siteInfoOf(hlsMuxed), 'best')).toEqual({
      kind: 'hls',
      muxed: { kind: 'hls', url: `${base}/v0.m3u8`, manifest_url: `${base}/muxed.m3u8`, headers: {}, ext: 'mp4', height: 720, format_id: '1280' },
    });
    expect(chooseFormats(siteInfoOf(hlsMuxed), 'worst')).toMatchObject({ muxed: { format_id: '640' } });
  });

  test('when the site gives a DASH manifest, then its representations by id, with the manifest', () => {
    expect(chooseFormats(siteInfoOf(dash), 'best')).toMatchObject({
      kind: 'dash',
      video: { format_id: '0', url: mpd, manifest_url: mpd, height: 240 },
      audio: { format_id: '2', url: mpd, ext: 'm4a' },
    });
  });

  test('when yt-dlp gives one file and no formats list, then that file, with the Referer it asks for', () => {
    const choice = chooseFormats(siteInfoOf(single), 'best');
    expect(choice).toMatchObject({ kind: 'direct', muxed: { url: single.url, ext: 'mp4', format_id: '0' } });
    expect(choice.muxed!.headers).toMatchObject({ Referer: 'http://127.0.0.1:18731/twstream.html' });
    expect(choice.muxed!.headers).not.toHaveProperty('Sec-Fetch-Mode');
  });

  test('when every format has DRM, then drm_protected', () => {
    const info = withFormats(
      hlsWithAudio,
      hlsWithAudio.formats.map((format) => ({ ...format, has_drm: true })),
    );
    expect(() => chooseFormats(info, 'best')).toThrow(expect.objectContaining({ code: 'drm_protected' }));
  });

  test('when only the taller formats have DRM, then the others are chosen', () => {
    const info = withFormats(
      youtubeLike,
      youtubeLike.formats.map((format) => ({ ...format, has_drm: (format.height ?? 0) >= 720 })),
    );
    expect(chooseFormats(info, 'best')).toMatchObject({ muxed: { format_id: '18' } });
  });

  test('when only protocols the service cannot fetch are offered, then unsupported_source; when one it can is among them, that one', () => {
    const others = [
      { format_id: 'rtmp', url: 'rtmp://media.example/app/clip', protocol: 'rtmp', ext: 'flv', height: 1080 },
      { format_id: 'hds', url: 'https://media.example/clip.f4m', protocol: 'f4m', ext: 'flv', height: 1080 },
      { format_id: 'mss', url: 'https://media.example/clip.ism/Manifest', protocol: 'ism', ext: 'ismv', height: 1080 },
      { format_id: 'ws', url: 'wss://media.example/live', protocol: 'websocket_frag', ext: 'mp4', height: 1080 },
      { format_id: 'odd', url: 'https://media.example/a.mp4', protocol: 'constructor', ext: 'mp4', height: 1080 },
    ];
    expect(() => chooseFormats(withFormats(youtubeLike, others), 'best')).toThrow(expect.objectContaining({ code: 'unsupported_source' }));
    const https = { format_id: 'plain', url: 'https://media.example/clip.mp4', protocol: 'https', ext: 'mp4', height: 240 };
    expect(chooseFormats(withFormats(youtubeLike, [...others, https]), 'best')).toMatchObject({ muxed: { format_id: 'plain' } });
  });

  test('when a site offers only audio, then the best audio', () => {
    const info = withFormats(
      youtubeLike,
      youtubeLike.formats.filter((format) => format.vcodec === 'none'),
    );
    expect(chooseFormats(info, 720)).toEqual({ kind: 'direct', audio: expect.objectContaining({ format_id: '140' }) });
  });

  test('when a format has fields of the wrong type, then it is left out and the others are kept', () => {
    const info = withFormats(hlsMuxed, [
      ...hlsMuxed.formats,
      { format_id: 'bad', url: `${base}/big.m3u8`, protocol: 'm3u8_native', height: '4320' },
      { format_id: 'no-url' },
    ]);
    expect(info.formats!.map((format) => format.format_id)).toEqual(['640', '1280']);
  });

  test('when yt-dlp answers a playlist, then its first video, under the playlist extractor', () => {
    const info = siteInfoOf({
      _type: 'playlist',
      extractor_key: 'Generic',
      extractor: 'generic',
      title: 'Feed',
      entries: [null, { _type: 'video', title: 'One', url: single.url, protocol: 'http' }],
    });
    expect(info).toMatchObject({ extractor_key: 'Generic', title: 'One', url: single.url });
  });
});

describe('the headers sent with a format', () => {
  test('when a site asks for headers, then only harmless ones of bounded size are kept', () => {
    const kept = safeHeaders({
      'User-Agent': 'UA',
      referer: 'http://a.example/',
      Origin: 'http://a.example',
      Cookie: 'k=v',
      'X-Playback-Session-Id': 'abc',
      Host: 'internal.example',
      Authorization: 'Bearer stolen',
      'Proxy-Authorization': 'Basic x',
      'Sec-Fetch-Mode': 'navigate',
      'X-Split': 'a\r\nInjected: yes',
      'X-Nul': 'a\0b',
      'X-Big': 'x'.repeat(5000),
      'Bad Name': 'v',
    });
    expect(kept).toEqual({ 'User-Agent': 'UA', referer: 'http://a.example/', Origin: 'http://a.example', Cookie: 'k=v', 'X-Playback-Session-Id': 'abc' });
  });

  test('when a site asks for many headers, then at most 20, one per name', () => {
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, n) => [`X-H${n}`, String(n)]));
    expect(Object.keys(safeHeaders({ Referer: 'a', REFERER: 'b', ...many }))).toHaveLength(20);
    expect(safeHeaders({ Referer: 'a', REFERER: 'b' })).toEqual({ Referer: 'a' });
  });
});

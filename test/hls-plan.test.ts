import { createDecipheriv } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { DownloadError } from '../src/core/errors.ts';
import { loadConfig } from '../src/config/index.ts';
import { DocumentSandbox } from '../src/sources/sandbox/document-sandbox.ts';
import { planHls } from '../src/sources/hls/index.ts';
import type { Mode } from '../src/core/mode.ts';
import type { Quality } from '../src/core/quality.ts';
import type { MediaPlan, Segment, SegmentKey } from '../src/sources/types.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { prepareHlsFixtures, serveHlsFixture, type HlsFixtureName, type HlsFixtures } from './support/streams/hls-fixtures.ts';
import { HLS_EXPLICIT_IV, HLS_SEQUENCE_START } from './support/streams/hls-recipes.ts';
import { testSourceHttp } from './support/source-http.ts';

const http = testSourceHttp();
const sandbox = new DocumentSandbox();
const maxSegments = loadConfig({}).maxSegments;

let server: FixtureServer;
let fixtures: HlsFixtures;

beforeAll(async () => {
  [server, fixtures] = await Promise.all([startFixtureServer(), prepareHlsFixtures()]);
});

afterAll(async () => {
  await Promise.all([server?.close(), sandbox.close()]);
});

/** The files ffmpeg wrote into `dir` whose names match `pattern`, ordered by the number it captures. */
function writtenSegments(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir)
    .map((name) => ({ name, match: pattern.exec(name) }))
    .filter(({ match }) => match)
    .sort((a, b) => Number(a.match![1]) - Number(b.match![1]))
    .map(({ name }) => name);
}

/** A planned segment at `url`, with the duration its EXTINF gave it. */
function timed(url: string): Segment {
  return { url, durationSeconds: expect.any(Number) as number };
}

function serve(name: HlsFixtureName, routePrefix: string): string {
  return serveHlsFixture(server, fixtures[name], routePrefix);
}

async function fetchText(url: string): Promise<{ url: string; text: string }> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return { url: response.url, text: await response.text() };
}

async function plan(url: string, quality: Quality = 'best', mode: Mode = 'video'): Promise<MediaPlan> {
  const playlist = await fetchText(url);
  return planHls({ url: playlist.url, bytes: Buffer.from(playlist.text), http, sandbox, maxSegments, quality, mode, signal: AbortSignal.timeout(10_000) });
}

function planText(url: string, text: string, quality: Quality = 'best'): Promise<MediaPlan> {
  return planHls({ http, sandbox, maxSegments, url, bytes: Buffer.from(text), quality, mode: 'video', signal: AbortSignal.timeout(10_000) });
}

function sequenceIv(sequence: number): string {
  return sequence.toString(16).padStart(32, '0');
}

async function decrypt(segment: Segment): Promise<Buffer> {
  const key = segment.key as SegmentKey;
  const keyBytes = Buffer.from(await (await fetch(key.uri)).arrayBuffer());
  const encrypted = Buffer.from(await (await fetch(segment.url)).arrayBuffer());
  const decipher = createDecipheriv('aes-128-cbc', keyBytes, Buffer.from(key.iv, 'hex'));
  return Buffer.concat([decipher.update(encrypted), decipher.final()]);
}

describe('HLS media playlists', () => {
  test('when a playlist of MPEG-TS segments is planned, then one muxed track lists every segment ffmpeg wrote, in order, as absolute URLs', async () => {
    const url = serve('ts', '/ts');
    const names = writtenSegments(fixtures.ts.dir, /^seg(\d+)\.ts$/);
    expect(names).toHaveLength(4);
    expect(await plan(url)).toEqual({ tracks: [{ kind: 'muxed', segments: names.map((name) => timed(server.url(`/ts/${name}`))) }] });
  });

  test('when a single-file playlist is planned, then its byte ranges cover the file exactly, in order and without gaps', async () => {
    const url = serve('single-file', '/single');
    const size = (await stat(path.join(fixtures['single-file'].dir, 'media.ts'))).size;
    const [track] = (await plan(url)).tracks;
    expect(track!.segments.length).toBeGreaterThanOrEqual(3);
    let end = 0;
    for (const segment of track!.segments) {
      expect(segment.url).toBe(server.url('/single/media.ts'));
      expect(segment.byteRange?.offset).toBe(end);
      end += segment.byteRange!.length;
    }
    expect(end).toBe(size);
  });

  test('when byte ranges leave out their offsets, then each one starts where the previous range of the same file ended', async () => {
    const url = serve('single-file', '/implicit');
    const { text } = await fetchText(url);
    let first = true;
    // Only the first range keeps its offset; the spec lets every later one leave it out.
    const implicit = text.replace(/(#EXT-X-BYTERANGE:\d+)@\d+/g, (whole, range: string) => (first ? ((first = false), whole) : range));
    expect(implicit).not.toBe(text);
    expect(await planText(url, implicit)).toEqual(await planText(url, text));
  });

  test('when an fMP4 playlist is planned, then its EXT-X-MAP becomes the init section and the segments follow it', async () => {
    const url = serve('fmp4', '/fmp4');
    const names = writtenSegments(fixtures.fmp4.dir, /^seg(\d+)\.m4s$/);
    const [track] = (await plan(url)).tracks;
    expect(track!.init).toEqual({ url: server.url('/fmp4/init.mp4') });
    expect(track!.segments).toEqual(names.map((name) => timed(server.url(`/fmp4/${name}`))));
  });

  test('when EXTINF durations are not believable (not a number, negative, zero, a year), then only the believable ones are kept', async () => {
    const durations = ['2.5', 'abc', '-3', '0', String(365 * 86_400), '1.25'];
    const text = ['#EXTM3U', '#EXT-X-TARGETDURATION:3', ...durations.flatMap((duration, i) => [`#EXTINF:${duration},`, `s${i}.ts`]), '#EXT-X-ENDLIST', ''];
    const [track] = (await planText(server.url('/durations/index.m3u8'), text.join('\n'))).tracks;
    expect(track!.segments.map((segment) => segment.durationSeconds)).toEqual([2.5, undefined, undefined, undefined, undefined, 1.25]);
  });

  test('when an EXT-X-KEY comes before the EXT-X-MAP, then the init section is under that key, and when it comes after, it is not', async () => {
    const url = serve('fmp4', '/fmp4-keys');
    const { text } = await fetchText(url);
    const keyTag = `#EXT-X-KEY:METHOD=AES-128,URI="k.key",IV=0x${HLS_EXPLICIT_IV}`;
    const expectedKey = { method: 'AES-128', uri: server.url('/fmp4-keys/k.key'), iv: HLS_EXPLICIT_IV };

    const before = (await planText(url, text.replace('#EXT-X-MAP', `${keyTag}\n#EXT-X-MAP`))).tracks[0]!;
    expect(before.init?.key).toEqual(expectedKey);
    expect(before.segments[0]?.key).toEqual(expectedKey);

    const after = (await planText(url, text.replace(/(#EXT-X-MAP:.*)/, `$1\n${keyTag}`))).tracks[0]!;
    expect(after.init).toEqual({ url: server.url('/fmp4-keys/init.mp4') });
    expect(after.segments[0]?.key).toEqual(expectedKey);
  });
});

describe('HLS AES-128', () => {
  test('when the key has an IV, then every segment carries that IV and the key URL, and decrypts to the clear stream', async () => {
    const url = serve('aes-iv', '/aes-iv');
    const clear = writtenSegments(fixtures.ts.dir, /^seg(\d+)\.ts$/);
    const [track] = (await plan(url)).tracks;
    expect(track!.segments.map((segment) => segment.key)).toEqual(
      clear.map(() => ({ method: 'AES-128', uri: server.url('/aes-iv/aes.key'), iv: HLS_EXPLICIT_IV })),
    );
    const first = await decrypt(track!.segments[0]!);
    expect(first[0]).toBe(0x47);
    // The encrypted fixtures are the clear one's exact bytes, encrypted.
    expect(first.equals(await readFile(path.join(fixtures.ts.dir, clear[0]!)))).toBe(true);
  });

  test("when the key has no IV, then each segment's IV is its media sequence number, which is what decrypts it", async () => {
    const url = serve('aes-sequence', '/aes-sequence');
    const clear = writtenSegments(fixtures.ts.dir, /^seg(\d+)\.ts$/);
    const [track] = (await plan(url)).tracks;
    expect(track!.segments.map((segment) => segment.key?.iv)).toEqual(clear.map((_name, index) => sequenceIv(HLS_SEQUENCE_START + index)));
    // CBC with a wrong IV garbles only the first block, so the whole segment is compared, not just its sync byte.
    for (const [index, segment] of track!.segments.entries()) {
      const decrypted = await decrypt(segment);
      expect(decrypted[0]).toBe(0x47);
      expect(decrypted.equals(await readFile(path.join(fixtures.ts.dir, clear[index]!)))).toBe(true);
    }
  });

  test('when METHOD=NONE follows a key, then the segments after it are in the clear', async () => {
    const url = serve('aes-iv', '/aes-none');
    const { text } = await fetchText(url);
    const lines = text.split('\n');
    lines.splice(lines.indexOf('seg1.ts') + 1, 0, '#EXT-X-KEY:METHOD=NONE');
    const [track] = (await planText(url, lines.join('\n'))).tracks;
    expect(track!.segments.map((segment) => segment.key !== undefined)).toEqual([true, true, false, false]);
  });
});

describe('HLS master playlists', () => {
  const dirOf = (plan: MediaPlan) => new Set(plan.tracks.flatMap((track) => track.segments.map((segment) => segment.url.split('/').at(-2))));

  test.each<[Quality, string]>([
    ['best', 'v720'],
    ['worst', 'v180'],
    [480, 'v360'],
    [720, 'v720'],
    [100, 'v180'],
  ])('when the quality is %p, then the %s variant is chosen and only its playlist is fetched', async (quality, expected) => {
    const prefix = `/master-${quality}`;
    const url = serve('master', prefix);
    const chosen = await plan(url, quality);
    expect(chosen.tracks).toHaveLength(1);
    expect(chosen.tracks[0]!.kind).toBe('muxed');
    expect(dirOf(chosen)).toEqual(new Set([expected]));
    const names = writtenSegments(path.join(fixtures.master.dir, expected), /^seg(\d+)\.ts$/);
    expect(chosen.tracks[0]!.segments.map((segment) => segment.url)).toEqual(names.map((name) => server.url(`${prefix}/${expected}/${name}`)));
    const fetched = server.requests.filter((request) => request.path.startsWith(`${prefix}/`) && request.path.endsWith('/index.m3u8'));
    expect(fetched.map((request) => request.path)).toEqual([`${prefix}/${expected}/index.m3u8`]);
  });

  test.each<[Quality, string]>([
    ['best', 'v720'],
    ['worst', 'v360'],
    [1080, 'v720'],
  ])(
    'when variants differ in height, width and bandwidth, I-frame and audio-only variants are listed, and the quality is %p, then height decides before width and bandwidth and %s is chosen',
    async (quality, expected) => {
      const prefix = `/ranking-${quality}`;
      serve('master', prefix);
      // The declared attributes are what is ranked, so the fixture's playlists stand in for
      // variants that are wider, or of the same size with less bandwidth.
      const master = [
        '#EXTM3U',
        '#EXT-X-STREAM-INF:BANDWIDTH=5000000,RESOLUTION=1920x360',
        'v360/index.m3u8',
        '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=960x720',
        'v180/index.m3u8',
        '#EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=960x720',
        'v720/index.m3u8',
        '#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"',
        'audio-only.m3u8',
        '#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=9000000,RESOLUTION=1920x1080,URI="iframes.m3u8"',
        '',
      ].join('\n');
      expect(dirOf(await planText(server.url(`${prefix}/ranked.m3u8`), master, quality))).toEqual(new Set([expected]));
    },
  );

  test('when the variant has a separate audio group, then the video and the DEFAULT=YES audio rendition are two tracks', async () => {
    const url = serve('audio-rendition', '/audio');
    const { dir } = fixtures['audio-rendition'];
    const urls = (sub: string) => writtenSegments(path.join(dir, sub), /^seg(\d+)\.ts$/).map((name) => timed(server.url(`/audio/${sub}/${name}`)));
    expect(await plan(url)).toEqual({
      tracks: [
        { kind: 'video', segments: urls('video') },
        { kind: 'audio', segments: urls('audio-de') },
      ],
      // The master offers no subtitle rendition.
      subtitles: [],
    });
  });

  test('when the variant playlist is redirected, then its segments resolve against where it really is', async () => {
    serve('ts', '/moved/stream');
    server.redirect('/entry/variant/index.m3u8', server.url('/moved/stream/index.m3u8'));
    const master = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180\nvariant/index.m3u8\n';
    const [track] = (await planText(server.url('/entry/master.m3u8'), master)).tracks;
    expect(track!.segments[0]?.url).toBe(server.url('/moved/stream/seg0.ts'));
  });

  test('when the variant playlist answers 404, then the plan fails with source_http_error', async () => {
    server.status('/gone/variant.m3u8', 404);
    const master = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=300000\nvariant.m3u8\n';
    await expect(planText(server.url('/gone/master.m3u8'), master)).rejects.toMatchObject({ code: 'source_http_error', retryable: false });
  });
});

describe('HLS refusals', () => {
  async function refusal(promise: Promise<MediaPlan>): Promise<DownloadError> {
    const error = await promise.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(DownloadError);
    return error as DownloadError;
  }

  test.each([
    ['has no EXT-X-ENDLIST', (text: string) => text.replace('#EXT-X-PLAYLIST-TYPE:VOD\n', '').replace('#EXT-X-ENDLIST', '')],
    ['is an EVENT playlist without EXT-X-ENDLIST', (text: string) => text.replace('PLAYLIST-TYPE:VOD', 'PLAYLIST-TYPE:EVENT').replace('#EXT-X-ENDLIST', '')],
  ])('when the playlist %s, then it is refused as a live stream', async (_case, edit) => {
    const url = serve('ts', '/live');
    const { text } = await fetchText(url);
    const error = await refusal(planText(url, edit(text)));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toMatch(/live streams are not supported/);
  });

  test.each([
    ['METHOD=SAMPLE-AES', (text: string) => text.replace('METHOD=AES-128', 'METHOD=SAMPLE-AES'), /SAMPLE-AES/],
    ['METHOD=SAMPLE-AES-CTR', (text: string) => text.replace('METHOD=AES-128', 'METHOD=SAMPLE-AES-CTR'), /SAMPLE-AES-CTR/],
    [
      'FairPlay',
      (text: string) =>
        text.replace('METHOD=AES-128', 'METHOD=SAMPLE-AES').replace('URI="aes.key"', 'URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery"'),
      /FairPlay.*com\.apple\.streamingkeydelivery/,
    ],
    ['Widevine', (text: string) => text.replace('URI="aes.key"', 'URI="aes.key",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"'), /Widevine/],
  ])('when the key is %s, then the stream is refused as drm_protected', async (_case, edit, message) => {
    const url = serve('aes-iv', '/drm');
    const { text } = await fetchText(url);
    const error = await refusal(planText(url, edit(text)));
    expect(error.code).toBe('drm_protected');
    expect(error.message).toMatch(message);
  });

  test('when a master playlist announces a FairPlay session key, then it is refused as drm_protected before any variant is fetched', async () => {
    const master = [
      '#EXTM3U',
      '#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"',
      '#EXT-X-STREAM-INF:BANDWIDTH=300000',
      'variant.m3u8',
      '',
    ].join('\n');
    const error = await refusal(planText(server.url('/session/master.m3u8'), master));
    expect(error.code).toBe('drm_protected');
    expect(server.requestsFor('/session/variant.m3u8')).toHaveLength(0);
  });

  test.each([
    ['is not a playlist', '<!doctype html><html></html>', /not an HLS playlist/],
    ['has no segments', '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-ENDLIST\n', /no media segments/],
    ['is a master without variants', '#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="x",URI="a.m3u8"\n', /no variant streams/],
    [
      'has a byte range without an offset and nothing before it',
      '#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n#EXT-X-BYTERANGE:100\na.ts\n#EXT-X-ENDLIST\n',
      /without the offset/,
    ],
    [
      'switches to another EXT-X-MAP mid-stream',
      '#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:1\n#EXT-X-MAP:URI="a.mp4"\n#EXTINF:1,\na.m4s\n#EXT-X-MAP:URI="b.mp4"\n#EXTINF:1,\nb.m4s\n#EXT-X-ENDLIST\n',
      /changes its initialization section/,
    ],
    ['refers to a segment by a URI that is not HTTP', '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nftp://127.0.0.1/a.ts\n#EXT-X-ENDLIST\n', /ftp: URIs/],
  ])('when the text %s, then it is refused as unsupported_source', async (_case, text, message) => {
    const error = await refusal(planText(server.url('/bad/index.m3u8'), text));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toMatch(message);
  });
});

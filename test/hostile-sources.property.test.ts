import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import type { Download } from './support/api.ts';
import { insertedAnywhere } from './support/arbitraries.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { dashFixtures, serveDashFixture } from './support/streams/dash-fixtures.ts';
import { prepareHlsFixtures, serveHlsFixture } from './support/streams/hls-fixtures.ts';
import { worstLoopStall } from './support/loop-stalls.ts';
import { waitFor } from './support/waiting.ts';

// Playlists, manifests and pages generated around real ones (which download) and far from them
// (which must not): whatever a source serves, the download ends completed or failed with a code of
// the contract (never internal_error), no download blocks the event loop with more than 200 ms of work in one piece (support/loop-stalls.ts), and
// a failed download leaves nothing on disk.

const RUNS = 12;
const MAX_LOOP_STALL_MS = 200;
const NOT_OURS = ['internal_error'];

const { app, source } = useService({ maxAttempts: 1, sourceIdleTimeoutSeconds: 5, maxFileBytes: 64 * 1024 * 1024 });
let hlsUrl: string;
let hlsText: string;
let dashUrl: string;
let dashText: string;
let served = 0;

beforeAll(async () => {
  const [hls, dash] = await Promise.all([prepareHlsFixtures(), dashFixtures()]);
  hlsUrl = serveHlsFixture(source, hls.ts, '/hls');
  hlsText = await readFile(path.join(hls.ts.dir, hls.ts.playlist), 'utf8');
  dashUrl = serveDashFixture(source, dash.number, '/dash');
  dashText = await readFile(dash.number.manifest, 'utf8');
  source.file('/clip.mp4', mediaPath('clip.mp4'));
  // The first download of a process pays once for what every later one reuses (the database
  // client prepares each query on its first use); that is not what the loop delay is about.
  await expectEnded(hlsUrl);
}, 120_000);

const bigNumber = fc.oneof(fc.nat(), fc.constantFrom('2000000000', '1e308', '-1', '0', 'NaN', '99999999999999999999', '0.0000001'));
/** Text that cannot name a host: nothing generated may send the service anywhere but loopback. */
const hostlessText = (maxLength: number) => fc.string({ maxLength }).map((text) => text.replace(/[/\\:]/g, '_'));

const junkUri = fc.oneof(
  fc.constantFrom('file:///etc/passwd', 'data:,x', '../../../../etc/passwd', 'skd://key', 'http://[::1]/x', '/'.repeat(5000), 'seg0.ts', 'missing.ts'),
  hostlessText(40),
);

const hlsLine = fc.oneof(
  fc.tuple(bigNumber, bigNumber).map(([length, offset]) => `#EXT-X-BYTERANGE:${length}@${offset}`),
  fc
    .tuple(fc.constantFrom('AES-128', 'NONE', 'SAMPLE-AES', 'X'), junkUri, fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), maxLength: 40 }))
    .map(([method, uri, iv]) => `#EXT-X-KEY:METHOD=${method},URI="${uri}",IV=0x${iv}`),
  junkUri.map((uri) => `#EXT-X-MAP:URI="${uri}"`),
  bigNumber.map((value) => `#EXT-X-MEDIA-SEQUENCE:${value}`),
  bigNumber.map((value) => `#EXTINF:${value},`),
  fc.constantFrom('#EXT-X-ENDLIST', '#EXT-X-DISCONTINUITY', '#EXT-X-STREAM-INF:BANDWIDTH=1', '#EXTM3U', '#EXT-X-PLAYLIST-TYPE:EVENT'),
  junkUri,
);

/** The real playlist (its URIs made absolute) with lines put in, or a playlist of generated lines only. */
function hlsDocument(): fc.Arbitrary<string> {
  const real = hlsText
    .split('\n')
    .map((line) => (line && !line.startsWith('#') ? new URL(line, hlsUrl).href : line))
    .join('\n');
  return fc.oneof(
    insertedAnywhere(
      real,
      hlsLine.map((line) => `\n${line}\n`),
    ),
    fc.array(hlsLine, { maxLength: 200 }).map((lines) => ['#EXTM3U', ...lines].join('\n')),
  );
}

const dashAttribute = fc.tuple(fc.constantFrom('duration', 'timescale', 'startNumber', 'endNumber', 'r', 'd', 't', 'mediaPresentationDuration'), bigNumber);

/** The real manifest with attribute values replaced or added, or a few generated elements. */
function dashDocument(): fc.Arbitrary<string> {
  const edited = fc.array(dashAttribute, { minLength: 1, maxLength: 4 }).map((edits) =>
    edits.reduce(
      (text, [name, value]) => {
        const existing = new RegExp(`\\b${name}="[^"]*"`);
        return existing.test(text) ? text.replace(existing, `${name}="${value}"`) : text.replace('<SegmentTemplate ', `<SegmentTemplate ${name}="${value}" `);
      },
      dashText.replace('<Period', `<BaseURL>${new URL('.', dashUrl).href}</BaseURL><Period`),
    ),
  );
  const made = fc.tuple(fc.array(dashAttribute, { maxLength: 4 }), fc.nat({ max: 300 }), junkUri).map(([attributes, baseUrls, uri]) => {
    const attrs = attributes.map(([name, value]) => `${name}="${value}"`).join(' ');
    const bases = `<BaseURL>${uri}</BaseURL>`.repeat(baseUrls % 50);
    return `<MPD type="static" mediaPresentationDuration="PT10S">${bases}<Period>${bases}<AdaptationSet mimeType="video/mp4">${bases}<Representation id="v" bandwidth="1">${bases}<SegmentTemplate media="s$Number$.m4s" ${attrs}/></Representation></AdaptationSet></Period></MPD>`;
  });
  return fc.oneof(edited, made);
}

/** Pages that carry a real stream or file somewhere, wrapped in nesting, slashes and JSON. */
function pageDocument(): fc.Arbitrary<string> {
  const target = fc.constantFrom(hlsUrl, dashUrl, source.url('/clip.mp4'), 'http://127.0.0.1:1/none.m3u8', '/none.mpd');
  const piece = fc.oneof(
    target.map((url) => `<video src="${url}"></video>`),
    target.map((url) => `<meta property="og:video" content="${url}">`),
    target.map((url) => `<script>var player = {"src": "${url.replaceAll('/', '\\/')}"};</script>`),
    fc.nat({ max: 20_000 }).map((depth) => `${'<div><video>'.repeat(depth % 5000)}<source src="x.mp4">`),
    fc.nat({ max: 200_000 }).map((count) => '/'.repeat(count)),
    fc.nat({ max: 50_000 }).map((depth) => `<script type="application/ld+json">${'['.repeat(depth)}${']'.repeat(depth)}</script>`),
    hostlessText(100),
  );
  return fc
    .array(piece, { minLength: 1, maxLength: 6 })
    .map((pieces) => `<!doctype html><html><head><title>t</title></head><body>${pieces.join('\n')}</body></html>`);
}

async function expectEnded(url: string): Promise<void> {
  const created = await app.http.createDownload({ url });
  expect(created.status).toBe(202);
  const done = await app.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
  const stored = path.join(app.config.dataDir, 'files', done.id);
  if (done.status === 'completed') {
    expect((await stat(stored)).size).toBe(done.file?.size_bytes);
    return;
  }
  expect(NOT_OURS).not.toContain(done.error?.code);
  await waitFor(`the files of ${done.id} to go`, () => !existsSync(stored) && !existsSync(path.join(app.config.dataDir, 'partial', done.id)), 2_000);
}

async function checkEvery(kind: string, documents: fc.Arbitrary<string>, contentType: string): Promise<void> {
  const loop = worstLoopStall();
  let worstStallMs: number;
  try {
    await fc.assert(
      fc.asyncProperty(documents, async (text) => {
        const url = source.content(`/generated/${kind}/${(served += 1)}`, text, { contentType });
        await expectEnded(url);
      }),
      { numRuns: RUNS },
    );
  } finally {
    worstStallMs = loop.stop();
  }
  expect(worstStallMs).toBeLessThan(MAX_LOOP_STALL_MS);
}

test('when generated HLS playlists are downloaded, then each ends completed or failed with a contract code and none blocks the event loop', async () => {
  await checkEvery('hls', hlsDocument(), 'application/vnd.apple.mpegurl');
}, 300_000);

test('when generated DASH manifests are downloaded, then each ends completed or failed with a contract code and none blocks the event loop', async () => {
  await checkEvery('dash', dashDocument(), 'application/dash+xml');
}, 300_000);

test('when generated pages are downloaded, then each ends completed or failed with a contract code and none blocks the event loop', async () => {
  await checkEvery('page', pageDocument(), 'text/html');
}, 300_000);

import { loadConfig } from '../src/config/index.ts';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { planDash } from '../src/sources/dash/index.ts';
import type { Quality } from '../src/core/quality.ts';
import type { Segment, Track } from '../src/sources/types.ts';
import { frameHashes } from './support/ffmpeg.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { refusal } from './support/refusal.ts';
import { dashFixtures, serveDashFixture, type DashFixture, type DashFixtureName } from './support/streams/dash-fixtures.ts';

const maxSegments = loadConfig({}).maxSegments;

let server: FixtureServer;
let fixtures: Record<DashFixtureName, DashFixture>;
let manifestUrls: Record<string, string>;
let work: string;

beforeAll(async () => {
  fixtures = await dashFixtures();
  server = await startFixtureServer();
  manifestUrls = Object.fromEntries(Object.entries(fixtures).map(([name, fixture]) => [name, serveDashFixture(server, fixture, `/${name}`)]));
  work = await mkdtemp(path.join(os.tmpdir(), 'dash-plan-'));
});

afterAll(async () => {
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const manifestText = (name: DashFixtureName) => readFile(fixtures[name].manifest, 'utf8');

async function planFixture(name: DashFixtureName, quality: Quality = 'best', edit = (text: string) => text) {
  return planDash({ url: manifestUrls[name] ?? '', text: edit(await manifestText(name)), quality, maxSegments });
}

function trackOf(tracks: Track[], kind: Track['kind']): Track {
  const track = tracks.find((candidate) => candidate.kind === kind);
  if (!track) throw new Error(`the plan has no ${kind} track: ${JSON.stringify(tracks)}`);
  return track;
}

const partsOf = (track: Track): Segment[] => [...(track.init ? [track.init] : []), ...track.segments];

/** The generated file a planned URL names, when it is one served from the fixture's folder. */
function localFile(name: DashFixtureName, url: string): string {
  const prefix = `${server.origin}/${name}/`;
  expect(url.startsWith(prefix)).toBe(true);
  return path.join(fixtures[name].dir, decodeURIComponent(new URL(url).pathname).slice(name.length + 2));
}

async function fetchPart(part: Segment): Promise<Buffer> {
  const range = part.byteRange && `bytes=${part.byteRange.offset}-${part.byteRange.offset + part.byteRange.length - 1}`;
  const response = await fetch(part.url, { headers: range ? { range } : {} });
  expect(response.status).toBe(range ? 206 : 200);
  return Buffer.from(await response.arrayBuffer());
}

/** Fetches init and segments in plan order, as one file, and decodes its video. */
async function decodedFrames(track: Track): Promise<string[]> {
  const file = path.join(work, `${Date.now()}-${Math.random().toString(16).slice(2)}.mp4`);
  const parts = await Promise.all(partsOf(track).map(fetchPart));
  await writeFile(file, Buffer.concat(parts));
  return frameHashes(file);
}

describe('planDash on manifests ffmpeg wrote or that point at its files', () => {
  test.each<[DashFixtureName, string, Track['kind'][], number]>([
    ['number', 'SegmentTemplate with $Number$', ['video', 'audio'], 4],
    ['time', 'SegmentTemplate with $Time$ and a SegmentTimeline', ['video', 'audio'], 4],
    ['list', 'SegmentList of files', ['video', 'audio'], 4],
    ['list-ranges', 'SegmentList of media ranges', ['video', 'audio'], 4],
    ['base', 'SegmentBase with a sidx', ['video', 'audio'], 1],
    ['muxed', 'one muxed Representation with only BaseURLs', ['muxed'], 1],
  ])(
    'when the %s fixture (%s) is planned, then every part is a generated file and the video decodes to the source frames',
    async (name, _layout, kinds, videoSegments) => {
      const { tracks } = await planFixture(name);
      expect(tracks.map((track) => track.kind)).toEqual(kinds);
      for (const part of tracks.flatMap(partsOf)) {
        const file = localFile(name, part.url);
        expect(existsSync(file)).toBe(true);
        if (part.byteRange) expect(part.byteRange.offset + part.byteRange.length).toBeLessThanOrEqual(statSync(file).size);
      }
      const video = trackOf(tracks, kinds[0] ?? 'video');
      expect(video.segments).toHaveLength(videoSegments);
      const expected = await frameHashes(fixtures[name].videoSources[240] ?? '');
      expect(expected).toHaveLength(100);
      expect(await decodedFrames(video)).toEqual(expected);
    },
  );

  test.each<[Quality, number]>([
    ['best', 360],
    ['worst', 120],
    [240, 240],
    [300, 240],
    [100, 120],
  ])('when three heights are offered and quality is %p, then the %i-line video and the audio are planned', async (quality, height) => {
    const { tracks } = await planFixture('multi', quality);
    expect(tracks.map((track) => track.kind)).toEqual(['video', 'audio']);
    for (const part of tracks.flatMap(partsOf)) expect(existsSync(localFile('multi', part.url))).toBe(true);
    expect(await decodedFrames(trackOf(tracks, 'video'))).toEqual(await frameHashes(fixtures.multi.videoSources[height] ?? ''));
  });

  test.each<DashFixtureName>(['number', 'time', 'list', 'list-ranges'])(
    'when the %s fixture is planned, then every segment carries its duration, a second each for the video, four in all for each track',
    async (name) => {
      const { tracks } = await planFixture(name);
      for (const second of trackOf(tracks, 'video').segments.slice(0, -1)) expect(second.durationSeconds).toBeCloseTo(1, 2);
      for (const track of tracks) expect(track.segments.reduce((sum, segment) => sum + segment.durationSeconds!, 0)).toBeCloseTo(4, 1);
    },
  );

  test.each([
    ['a negative duration', (text: string) => text.replace('d="12800"', 'd="-12800"')],
    ['a timescale of zero', (text: string) => text.replace('timescale="12800"', 'timescale="0"')],
    ['a duration of a thousand years', (text: string) => text.replace('d="12800"', `d="${12800 * 86_400 * 365_000}"`)],
  ])('when a SegmentTimeline gives %s, then its segments carry no duration (a clip fetches them whole)', async (_case, edit) => {
    const { tracks } = await planFixture('time', 'best', edit);
    const video = trackOf(tracks, 'video');
    expect(video.segments.length).toBeGreaterThan(0);
    for (const segment of video.segments) expect(segment.durationSeconds).toBeUndefined();
  });

  test('when the SegmentTemplate has startNumber 3, then the segments are numbered from 3', async () => {
    const { tracks } = await planFixture('number', 'best', (text) => text.replaceAll('startNumber="1"', 'startNumber="3"'));
    // ffmpeg names its segments .mp4 or .m4s depending on its version; the manifest says which.
    const extension = /media="[^"]*?(\.\w+)"/.exec(await manifestText('number'))![1];
    expect(trackOf(tracks, 'video').segments.map((segment) => path.basename(segment.url))).toEqual(
      [3, 4, 5, 6].map((n) => `chunk-stream0-0000${n}${extension}`),
    );
  });

  test('when a SegmentBase has no indexRange, then the whole file is the one segment and its init range is not fetched twice', async () => {
    const { tracks } = await planFixture('base', 'best', (text) => text.replace(/ indexRange="[^"]*"/g, ''));
    // Its one segment lasts what the MPD says the whole presentation does.
    expect(trackOf(tracks, 'video')).toEqual({ kind: 'video', segments: [{ url: `${server.origin}/base/media/video.mp4`, durationSeconds: 4 }] });
  });

  test('when the MPD is dynamic, then it is refused as an unsupported live source', async () => {
    const text = (await manifestText('number')).replace('type="static"', 'type="dynamic" availabilityStartTime="2020-01-01T00:00:00Z"');
    const error = refusal(() => planDash({ url: manifestUrls.number ?? '', text, quality: 'best', maxSegments }));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toMatch(/live DASH is not supported/);
  });

  test('when the text is not an MPD, then it is refused as an unsupported source', () => {
    expect(refusal(() => planDash({ url: manifestUrls.number ?? '', text: '<html><body>hi</body></html>', quality: 'best', maxSegments })).code).toBe(
      'unsupported_source',
    );
  });

  const widevine = '<ContentProtection schemeIdUri="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"/>';
  test.each([
    [
      'cenc on the video AdaptationSet',
      /(<AdaptationSet[^>]*contentType="video"[^>]*>)/,
      '<ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc"/>',
      /Common Encryption/,
    ],
    ['Widevine on the audio AdaptationSet', /(<AdaptationSet[^>]*contentType="audio"[^>]*>)/, widevine, /Widevine/],
    [
      'PlayReady on the video Representation',
      /(<Representation id="0"[^>]*>)/,
      '<ContentProtection schemeIdUri="urn:uuid:9A04F079-9840-4286-AB92-E65BE0885F95"/>',
      /PlayReady/,
    ],
  ])('when a chosen stream carries %s, then it is refused as DRM-protected', async (_case, anchor, protection, named) => {
    const text = (await manifestText('number')).replace(anchor, `$1${protection}`);
    const error = refusal(() => planDash({ url: manifestUrls.number ?? '', text, quality: 'best', maxSegments }));
    expect(error.code).toBe('drm_protected');
    expect(error.message).toMatch(named);
  });

  test('when only a Representation that is not chosen is protected, then the plan goes ahead', async () => {
    // Representation 1 is the 360-line one; `worst` picks 120 lines.
    const { tracks } = await planFixture('multi', 'worst', (text) => text.replace(/(<Representation id="1"[^>]*>)/, `$1${widevine}`));
    expect(tracks.map((track) => track.kind)).toEqual(['video', 'audio']);
  });
});

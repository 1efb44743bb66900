import path from 'node:path';
import { loadConfig } from '../../src/config/index.ts';
import type { Quality } from '../../src/core/quality.ts';
import { planDash } from '../../src/sources/dash/index.ts';
import { refusal } from '../support/refusal.ts';

// planDash on manifests written here, choosing among their Representations; manifests that ffmpeg
// wrote, served by a fixture server, are in test/dash-plan.test.ts.

const maxSegments = loadConfig({}).maxSegments;

describe('planDash choosing among Representations', () => {
  const representation = (id: string, bandwidth: number, extra = '') =>
    `<Representation id="${id}" bandwidth="${bandwidth}" ${extra}><BaseURL>${id}.mp4</BaseURL></Representation>`;
  const audioSet = (lang: string, role: string, ...representations: string[]) =>
    `<AdaptationSet contentType="audio" mimeType="audio/mp4" lang="${lang}">${role && `<Role schemeIdUri="urn:mpeg:dash:role:2011" value="${role}"/>`}${representations.join('')}</AdaptationSet>`;
  const videoSet = (...representations: string[]) => `<AdaptationSet contentType="video" mimeType="video/mp4">${representations.join('')}</AdaptationSet>`;
  const mpd = (...sets: string[]) =>
    `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"><Period>${sets.join('')}</Period></MPD>`;
  const url = 'http://127.0.0.1:9/streams/manifest.mpd';
  const chosen = (text: string, quality: Quality = 'best') =>
    planDash({ url, text, quality, maxSegments }).tracks.map((track) => `${track.kind}:${path.basename(track.segments[0]?.url ?? '')}`);

  test('when two Representations share the height limit, then the one with more bandwidth is chosen', () => {
    const text = mpd(
      videoSet(
        representation('v240-lo', 100_000, 'height="240"'),
        representation('v360', 400_000, 'height="360"'),
        representation('v240-hi', 200_000, 'height="240"'),
      ),
      audioSet('en', '', representation('a', 64_000)),
    );
    expect(chosen(text, 240)).toEqual(['video:v240-hi.mp4', 'audio:a.mp4']);
  });

  test('when one audio language has Role main, then its best bandwidth wins over a richer other language', () => {
    const text = mpd(
      videoSet(representation('v', 100_000, 'height="240"')),
      audioSet('fr', '', representation('fr-128', 128_000)),
      audioSet('en', 'main', representation('en-64', 64_000), representation('en-96', 96_000)),
    );
    expect(chosen(text)).toEqual(['video:v.mp4', 'audio:en-96.mp4']);
  });

  test('when no audio is marked main, then the best of the first language is chosen', () => {
    const text = mpd(
      videoSet(representation('v', 100_000, 'height="240"')),
      audioSet('de', '', representation('de-48', 48_000), representation('de-96', 96_000)),
      audioSet('fr', '', representation('fr-128', 128_000)),
    );
    expect(chosen(text)).toEqual(['video:v.mp4', 'audio:de-96.mp4']);
  });

  test.each([
    ['declares video codecs alone', 'codecs="avc1.42c00d"', 'video'],
    ['declares no codecs', '', 'muxed'],
  ])('when the only Representation %s, then it is planned as a %s track', (_case, codecs, kind) => {
    expect(chosen(mpd(videoSet(representation('v', 100_000, `height="240" ${codecs}`))))).toEqual([`${kind}:v.mp4`]);
  });

  const period = (start: string, init: string) =>
    `<Period start="${start}" duration="PT2S">${videoSet(`<Representation id="v" bandwidth="1" height="240"><SegmentTemplate initialization="${init}" media="${start}-$Number$.mp4" duration="1"/></Representation>`)}</Period>`;
  const periods = (...bodies: string[]) => mpd().replace('<Period></Period>', bodies.join(''));

  test('when two Periods share the initialization segment, then their segments follow each other in one track', () => {
    const { tracks } = planDash({ url, text: periods(period('PT0S', 'init.mp4'), period('PT2S', 'init.mp4')), quality: 'best', maxSegments });
    expect(tracks).toHaveLength(1);
    expect(tracks[0]?.init?.url).toBe('http://127.0.0.1:9/streams/init.mp4');
    expect(tracks[0]?.segments.map((segment) => path.basename(segment.url))).toEqual(['PT0S-1.mp4', 'PT0S-2.mp4', 'PT2S-1.mp4', 'PT2S-2.mp4']);
  });

  test('when a later Period changes the initialization segment, then the manifest is refused', () => {
    const text = periods(period('PT0S', 'init-a.mp4'), period('PT2S', 'init-b.mp4'));
    expect(refusal(() => planDash({ url, text, quality: 'best', maxSegments })).code).toBe('unsupported_source');
  });

  test('when there is only audio, then the plan is one audio track', () => {
    expect(chosen(mpd(audioSet('en', '', representation('a', 64_000))))).toEqual(['audio:a.mp4']);
  });

  test('when a Representation has neither segments nor a BaseURL, then it is refused instead of fetching the MPD as media', () => {
    const text = mpd(videoSet('<Representation id="v" bandwidth="1" height="240"/>'));
    expect(refusal(() => planDash({ url, text, quality: 'best', maxSegments })).code).toBe('unsupported_source');
  });

  test.each(['0', '0.5', '-1', 'none'])(
    'when a SegmentTemplate or SegmentList says its segments last @duration="%s", then the manifest is refused instead of planned as one segment',
    (duration) => {
      const template = `<SegmentTemplate initialization="init.mp4" media="$Number$.mp4" duration="${duration}"/>`;
      const list = `<SegmentList duration="${duration}"><Initialization sourceURL="init.mp4"/><SegmentURL media="1.mp4"/><SegmentURL media="2.mp4"/></SegmentList>`;
      for (const segments of [template, list]) {
        const text = mpd(videoSet(`<Representation id="v" bandwidth="1" height="240">${segments}</Representation>`));
        expect(refusal(() => planDash({ url, text, quality: 'best', maxSegments }))).toMatchObject({
          code: 'unsupported_source',
          message: expect.stringMatching(/^DASH Representation "v" gives its segments a duration of \S+, so they cannot be counted\.$/),
        });
      }
      const counted = mpd(videoSet(`<Representation id="v" bandwidth="1" height="240">${template.replace(`"${duration}"`, '"1"')}</Representation>`));
      expect(planDash({ url, text: counted, quality: 'best', maxSegments }).tracks[0]?.segments).toHaveLength(4);
    },
  );
});

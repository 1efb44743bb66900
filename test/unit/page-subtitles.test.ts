import { findMediaInPage } from '../../src/sources/html/page-media.ts';

// The subtitle and caption <track>s of a page's videos, read by findMediaInPage beside its media
// candidates. Every attribute is the page's, so every one is written here as an attacker would.

const PAGE_URL = 'https://site.example/watch/episode-1.html';

function page(head: string, body = ''): string {
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8">${head}</head><body>${body}</body></html>\n`;
}

const subtitlesOf = (html: string, pageUrl = PAGE_URL) => findMediaInPage({ html, pageUrl }).subtitles;
const urlsOf = (html: string) => subtitlesOf(html).map((subtitle) => subtitle.url);
const video = (tracks: string) => `<video src="/media/clip.mp4" controls>${tracks}</video>`;
const track = (src: string, attributes = '') => `<track src="${src}" ${attributes}>`;

describe('findMediaInPage: subtitle track URLs', () => {
  test('when a <video> has a track with a relative src, then it is resolved against the page URL with its language and label', () => {
    expect(subtitlesOf(page('', video(track('subs/en.vtt', 'kind="subtitles" srclang="en" label="English"'))))).toEqual([
      { url: 'https://site.example/watch/subs/en.vtt', language: 'en', label: 'English' },
    ]);
  });

  test('when tracks have absolute, protocol-relative and root-relative srcs, then each resolves as a <source> would', () => {
    const tracks = track('http://cdn.example/a.vtt') + track('//cdn.example/b.vtt') + track('/c.vtt');
    expect(urlsOf(page('', video(tracks)))).toEqual(['http://cdn.example/a.vtt', 'https://cdn.example/b.vtt', 'https://site.example/c.vtt']);
  });

  test('when the page has a relative <base href>, then track URLs resolve against it, as the video src does', () => {
    const found = findMediaInPage({ html: page('<base href="/static/v2/">', '<video src="clip.mp4"><track src="../subs/en.vtt"></video>'), pageUrl: PAGE_URL });
    expect(found.candidates).toEqual(['https://site.example/static/v2/clip.mp4']);
    expect(found.subtitles.map((subtitle) => subtitle.url)).toEqual(['https://site.example/static/subs/en.vtt']);
  });

  test('when the page has an absolute <base href> on another host after the video, then relative and protocol-relative tracks follow it', () => {
    const html = page('', video(track('en.vtt') + track('//cdn.example/fr.vtt')) + '<base href="http://media.example/files/">');
    expect(urlsOf(html)).toEqual(['http://media.example/files/en.vtt', 'http://cdn.example/fr.vtt']);
  });

  test('when a src carries entities, surrounding spaces and a fragment, then it is decoded, trimmed and the fragment dropped', () => {
    expect(urlsOf(page('', video(track('  /subs.vtt?a=1&amp;b=2#t=10 '))))).toEqual(['https://site.example/subs.vtt?a=1&b=2']);
  });

  test('when tracks have data:, javascript:, blob:, ftp:, empty or no src, then they are skipped and the http(s) ones kept', () => {
    const tracks = [
      track('data:text/vtt;base64,V0VCVlRU'),
      track('javascript:alert(1)'),
      track(' JavaScript:alert(2)'),
      track('blob:https://site.example/1234'),
      track('ftp://files.example/en.vtt'),
      track(''),
      track('   '),
      '<track srclang="en">',
      track('/kept.vtt'),
    ].join('');
    expect(urlsOf(page('', video(tracks)))).toEqual(['https://site.example/kept.vtt']);
  });

  test('when a src cannot be parsed as a URL, then that track is skipped', () => {
    expect(urlsOf(page('', video(track('http://[::1') + track('/ok.vtt'))))).toEqual(['https://site.example/ok.vtt']);
  });

  test('when a page has tracks in several videos, then they come in document order and the video sources are still the only candidates', () => {
    const html = page('', video(track('/one.vtt')) + '<div><video><source src="/two.mp4"><track src="/two.vtt"></video></div>');
    const found = findMediaInPage({ html, pageUrl: PAGE_URL });
    expect(found.subtitles.map((subtitle) => subtitle.url)).toEqual(['https://site.example/one.vtt', 'https://site.example/two.vtt']);
    expect(found.candidates).toEqual(['https://site.example/media/clip.mp4', 'https://site.example/two.mp4']);
  });

  test('when a page has no tracks, then subtitles is an empty list beside the candidates and title', () => {
    expect(findMediaInPage({ html: page('<title>Clip</title>', video('')), pageUrl: PAGE_URL })).toEqual({
      candidates: ['https://site.example/media/clip.mp4'],
      title: 'Clip',
      subtitles: [],
    });
  });
});

describe('findMediaInPage: track kinds', () => {
  test('when tracks are of kind subtitles, captions, in any case, or of no kind, then all are subtitles', () => {
    const tracks = [
      track('/subtitles.vtt', 'kind="subtitles"'),
      track('/captions.vtt', 'kind="captions"'),
      track('/upper.vtt', 'KIND="CAPTIONS"'),
      track('/mixed.vtt', 'kind=SubTitles'),
      track('/none.vtt'),
    ].join('');
    expect(urlsOf(page('', video(tracks)))).toEqual(['subtitles', 'captions', 'upper', 'mixed', 'none'].map((name) => `https://site.example/${name}.vtt`));
  });

  test('when tracks are chapters, descriptions, metadata, empty or unknown kinds, then none of them is a subtitle', () => {
    const tracks = ['chapters', 'descriptions', 'metadata', '', ' captions ', 'subtitle', 'captions subtitles'].map((kind, index) =>
      track(`/${index}.vtt`, `kind="${kind}"`),
    );
    expect(urlsOf(page('', video(tracks.join('') + track('/kept.vtt', 'kind="captions"'))))).toEqual(['https://site.example/kept.vtt']);
  });

  test('when a track has the kind attribute twice, then the first one decides, as HTML says', () => {
    const tracks = track('/chapters.vtt', 'kind="chapters" kind="subtitles"') + track('/captions.vtt', 'kind="captions" kind="metadata"');
    expect(urlsOf(page('', video(tracks)))).toEqual(['https://site.example/captions.vtt']);
  });
});

describe('findMediaInPage: track languages', () => {
  test('when srclang is a BCP 47 tag, with or without subtags and surrounding spaces, then it is the language as written, trimmed', () => {
    const languages = ['en', 'pt-BR', 'zh-Hans-CN', ' de ', 'FIL', 'sgn-BE-FR', 'en-US-x-twain1'];
    const tracks = languages.map((language, index) => track(`/${index}.vtt`, `srclang="${language}"`)).join('');
    expect(subtitlesOf(page('', video(tracks))).map((subtitle) => subtitle.language)).toEqual([
      'en',
      'pt-BR',
      'zh-Hans-CN',
      'de',
      'FIL',
      'sgn-BE-FR',
      'en-US-x-twain1',
    ]);
  });

  test('when srclang is not a language tag, then the language is null and the track is still kept', () => {
    const invalid = ['english', 'e', 'en_US', 'en-', '-en', 'en--US', '12', 'en-toolongtag', 'en US', 'ẽn', 'en\u0000', '"en"', `en${'-a'.repeat(100_000)}`];
    const tracks = invalid.map((language, index) => track(`/${index}.vtt`, `srclang="${language}"`)).join('');
    const subtitles = subtitlesOf(page('', video(tracks)));
    expect(subtitles).toHaveLength(invalid.length);
    expect(subtitles.map((subtitle) => subtitle.language)).toEqual(invalid.map(() => null));
  });

  test('when srclang is missing or blank, then the language is null', () => {
    const tracks = track('/missing.vtt') + track('/blank.vtt', 'srclang="  "') + track('/bare.vtt', 'srclang');
    expect(subtitlesOf(page('', video(tracks))).map((subtitle) => subtitle.language)).toEqual([null, null, null]);
  });
});

describe('findMediaInPage: track labels', () => {
  const labelOf = (label: string) => subtitlesOf(page('', video(track('/en.vtt', `label="${label}"`))))[0]?.label;

  test('when a label has surrounding spaces and entities, then it is trimmed and decoded', () => {
    expect(labelOf('  English &amp; SDH &quot;CC&quot;  ')).toBe('English & SDH "CC"');
  });

  test('when a label holds C0, DEL and C1 control characters, then they are removed and a run of tabs and line breaks becomes one space', () => {
    expect(labelOf('\u0000Eng\u0007lish\u001b[31m\u007f\u0085\u009b (SDH)')).toBe('English[31m (SDH)');
    expect(labelOf('\tEnglish\r\nSDH\f')).toBe('English SDH');
  });

  test('when a label holds control characters written as character references, then they are removed too', () => {
    expect(labelOf('Fr&#x7;an&#127;çais&#x1B;')).toBe('Français');
  });

  test('when a label is blank, only control characters, or missing, then the label is null', () => {
    expect(labelOf('   ')).toBeNull();
    expect(labelOf('\u0001\u0002\u007f')).toBeNull();
    expect(labelOf('')).toBeNull();
    expect(subtitlesOf(page('', video(track('/en.vtt'))))[0]?.label).toBeNull();
  });

  test('when a label is a megabyte long, then it is cut to 200 characters', () => {
    const label = labelOf(`  ${'Subtitle '.repeat(120_000)}`);
    expect(label).toHaveLength(200);
    expect(label).toBe(`${'Subtitle '.repeat(22)}Su`);
  });

  test('when a long label is made of characters outside the BMP, then it is cut at 200 of them, never inside a surrogate pair', () => {
    const label = labelOf('😀'.repeat(1_000));
    expect(Array.from(label ?? '')).toHaveLength(200);
    expect(label).toBe('😀'.repeat(200));
  });

  test('when the 200th character of a label is followed by control characters and spaces, then the cut label ends without spaces', () => {
    expect(labelOf(`${'a'.repeat(199)}\u0001 \u0002 ${'b'.repeat(50)}`)).toBe('a'.repeat(199));
  });
});

describe('findMediaInPage: tracks that are not a video’s', () => {
  test('when tracks belong to an <audio>, stand alone, or follow the video, then they are ignored', () => {
    const body = `
      ${track('/stray.vtt')}
      <audio src="/song.mp3">${track('/audio.vtt', 'kind="captions" srclang="en"')}</audio>
      ${video(track('/video.vtt'))}
      ${track('/after.vtt')}
      <p>${track('/paragraph.vtt')}</p>`;
    expect(urlsOf(page('', body))).toEqual(['https://site.example/video.vtt']);
  });

  test('when an <audio> sits inside a <video>, then its tracks are the audio’s and the video’s own after it still count', () => {
    const body = `<video><audio>${track('/audio.vtt')}</audio>${track('/video.vtt')}</video><audio><video>${track('/inner-video.vtt')}</video>${track('/outer-audio.vtt')}</audio>`;
    expect(urlsOf(page('', body))).toEqual(['https://site.example/video.vtt', 'https://site.example/inner-video.vtt']);
  });

  test('when a track sits deeper inside a <video>, then it counts as a <source> there does', () => {
    expect(urlsOf(page('', `<video><div><span>${track('/deep.vtt')}</span></div></video>`))).toEqual(['https://site.example/deep.vtt']);
  });

  test('when tracks are in a <template>, in a video inside one, or in a template inside a video, then they are ignored', () => {
    const body = `
      <template>${video(track('/template-video.vtt'))}</template>
      <video><template>${track('/video-template.vtt')}</template>${track('/after-template.vtt')}</video>
      <template><div><template>${video(track('/nested.vtt'))}</template></div></template>`;
    expect(urlsOf(page('', body))).toEqual(['https://site.example/after-template.vtt']);
  });

  test('when tracks are written in comments, scripts, styles, textareas or CDATA, then they are ignored', () => {
    const body = `
      <!-- ${video(track('/comment.vtt'))} -->
      <video><!-- ${track('/comment-in-video.vtt')} --></video>
      <script>document.write('${video(track('/script.vtt'))}');</script>
      <video><script>'${track('/script-in-video.vtt')}'</script></video>
      <style>/* ${video(track('/style.vtt'))} */</style>
      <textarea>${video(track('/textarea.vtt'))}</textarea>
      <video><![CDATA[${track('/cdata.vtt')}]]></video>
      <title>${video(track('/title.vtt'))}</title>`;
    expect(urlsOf(page('', body))).toEqual([]);
  });

  test('when a video is never closed, then its tracks still count up to the end of the page', () => {
    expect(urlsOf(`<video src="/v.mp4">${track('/open.vtt')}<div>${track('/still-open.vtt')}`)).toEqual([
      'https://site.example/open.vtt',
      'https://site.example/still-open.vtt',
    ]);
  });
});

describe('findMediaInPage: duplicate and excess tracks', () => {
  test('when the same URL is given by several tracks, in several spellings, then the first track’s comes back once', () => {
    const tracks = [
      track('/subs/en.vtt', 'srclang="en" label="First"'),
      track('/subs/en.vtt', 'srclang="de" label="Repeat"'),
      track('../subs/en.vtt', 'label="Relative"'),
      track('https://site.example/subs/en.vtt#t=1', 'label="Fragment"'),
      track('https://SITE.example:443/subs/%65n.vtt', 'label="Spelt otherwise"'),
      track('/subs/fr.vtt', 'srclang="fr" label="French"'),
    ].join('');
    const more = `<video>${track('/subs/fr.vtt', 'label="Second video"')}${track('/subs/de.vtt', 'srclang="de"')}</video>`;
    expect(subtitlesOf(page('', video(tracks) + more))).toEqual([
      { url: 'https://site.example/subs/en.vtt', language: 'en', label: 'First' },
      { url: 'https://site.example/subs/%65n.vtt', language: null, label: 'Spelt otherwise' },
      { url: 'https://site.example/subs/fr.vtt', language: 'fr', label: 'French' },
      { url: 'https://site.example/subs/de.vtt', language: 'de', label: null },
    ]);
  });

  test('when a page offers 100 distinct tracks, then the first 64 come back in order', () => {
    const tracks = Array.from({ length: 100 }, (_unused, index) => track(`/subs/${index}.vtt`, `srclang="en" label="Track ${index}"`)).join('');
    const subtitles = subtitlesOf(page('', video(tracks)));
    expect(subtitles).toHaveLength(64);
    expect(subtitles[0]).toEqual({ url: 'https://site.example/subs/0.vtt', language: 'en', label: 'Track 0' });
    expect(subtitles.at(-1)).toEqual({ url: 'https://site.example/subs/63.vtt', language: 'en', label: 'Track 63' });
  });

  test('when 64 of 100 tracks are skipped or repeated, then the bound counts only the tracks kept', () => {
    const skipped = Array.from({ length: 40 }, (_unused, index) => track(`javascript:void(${index})`)).join('');
    const repeated = track('/subs/0.vtt').repeat(24);
    const distinct = Array.from({ length: 70 }, (_unused, index) => track(`/subs/${index}.vtt`)).join('');
    const urls = urlsOf(page('', video(skipped + repeated + distinct)));
    expect(urls).toHaveLength(64);
    expect(urls.at(-1)).toBe('https://site.example/subs/63.vtt');
  });
});

describe('findMediaInPage on pages written to make tracks slow', () => {
  // In this thread, beside other test files on a loaded two-core machine; a finder gone quadratic
  // would take minutes on any of these.
  const BUDGET_MS = 2_000;
  const DEEP = 100_000;

  const timed = (html: string) => {
    const started = performance.now();
    const found = findMediaInPage({ html, pageUrl: PAGE_URL });
    expect(performance.now() - started).toBeLessThan(BUDGET_MS);
    return found.subtitles;
  };

  test('when a video holds 100 000 distinct tracks, then the first 64 come back within the budget', () => {
    const subtitles = timed(video(Array.from({ length: DEEP }, (_unused, index) => `<track src="/${index}.vtt" srclang="en" label="L${index}">`).join('')));
    expect(subtitles).toHaveLength(64);
    expect(subtitles.at(-1)?.url).toBe('https://site.example/63.vtt');
  });

  test('when a video holds 100 000 copies of one track, then it comes back once within the budget', () => {
    expect(timed(video(track('/same.vtt', 'label="Same"').repeat(DEEP)))).toEqual([{ url: 'https://site.example/same.vtt', language: null, label: 'Same' }]);
  });

  test('when 200 000 chapter and audio tracks come before a real one, then it is found within the budget', () => {
    const html = video(`${track('/chapters.vtt', 'kind="chapters"').repeat(DEEP)}<audio>${track('/audio.vtt').repeat(DEEP)}</audio>${track('/real.vtt')}`);
    expect(timed(html)).toEqual([{ url: 'https://site.example/real.vtt', language: null, label: null }]);
  });

  test('when 100 000 distinct javascript: tracks come before a real one, then reading stops after the first thousand srcs, within the budget', () => {
    // No honest page names a thousand tracks; one that does is not worth holding in memory.
    const junk = (count: number) => Array.from({ length: count }, (_unused, index) => `<track src="javascript:${index}">`).join('');
    expect(timed(video(junk(DEEP) + track('/real.vtt')))).toEqual([]);
    expect(timed(video(junk(1_023) + track('/real.vtt')))).toEqual([{ url: 'https://site.example/real.vtt', language: null, label: null }]);
  });

  test('when 100 000 videos nest, each with a track, then the first 64 come back within the budget', () => {
    const html = Array.from({ length: DEEP }, (_unused, index) => `<video><track src="/${index}.vtt">`).join('');
    expect(timed(html)).toHaveLength(64);
  });

  test('when 100 000 audios nest inside a video with a track inside them all, then it is ignored within the budget', () => {
    expect(timed(`<video>${'<audio>'.repeat(DEEP)}${track('/deep-audio.vtt')}${'</audio>'.repeat(DEEP)}${track('/video.vtt')}</video>`)).toEqual([
      { url: 'https://site.example/video.vtt', language: null, label: null },
    ]);
  });

  test('when a track sits 100 000 elements deep in a template in a video, then it is ignored within the budget', () => {
    expect(timed(`<video><template>${'<div>'.repeat(DEEP)}${track('/deep.vtt')}`)).toEqual([]);
  });

  test('when labels and languages are megabytes long, then each track is read within the budget', () => {
    const huge = 'x'.repeat(2 * 1024 * 1024);
    const subtitles = timed(video(`${track('/a.vtt', `label="${huge}" srclang="${huge}"`)}${track('/b.vtt', `label="${'\u0001'.repeat(2 * 1024 * 1024)}"`)}`));
    expect(subtitles.map((subtitle) => [subtitle.label?.length, subtitle.language])).toEqual([
      [200, null],
      [undefined, null],
    ]);
  });
});

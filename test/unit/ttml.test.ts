import { MAX_SAMPLES, MAX_SEGMENT_BYTES, stppDocuments } from '../../src/sources/ttml/stpp.ts';
import { cuesToWebVtt, MAX_CUES, ttmlToCues, type Cue } from '../../src/sources/ttml/to-webvtt.ts';
import { cue, TT, ttml } from '../support/ttml-documents.ts';

// TTML (whole files and stpp samples) to WebVTT: timing, text, and hostile documents and segments.

/** The times of the cues, to the microsecond (frame and tick arithmetic is not exact in binary). */
const times = (cues: Cue[]) => cues.map(({ start, end }) => [Number(start.toFixed(6)), Number(end.toFixed(6))]);
/** A DownloadError of this code (an asymmetric matcher, typed as what toThrow takes). */
const refusal = (code: string) => expect.objectContaining({ name: 'DownloadError', code }) as Error;

describe('TTML time expressions', () => {
  it.each([
    ['clock time with a fraction', 'begin="00:00:01.500" end="00:00:02.250"', '', [1.5, 2.25]],
    ['clock time with hours', 'begin="01:02:03.4" end="01:02:04"', '', [3723.4, 3724]],
    ['clock time with frames at ttp:frameRate', 'begin="00:00:01:12" end="00:00:02:00"', 'ttp:frameRate="24"', [1.5, 2]],
    ['clock time with frames at 30 when no frame rate is given', 'begin="00:00:00:15" end="00:00:01:00"', '', [0.5, 1]],
    ['frames at 30000/1001', 'begin="30f" end="60f"', 'ttp:frameRate="30" ttp:frameRateMultiplier="1000 1001"', [1.001, 2.002]],
    ['seconds', 'begin="1.5s" end="2s"', '', [1.5, 2]],
    ['milliseconds', 'begin="1500ms" end="2750ms"', '', [1.5, 2.75]],
    ['hours and minutes', 'begin="0.5m" end="0.01h"', '', [30, 36]],
    ['frames at ttp:frameRate', 'begin="30f" end="50f"', 'ttp:frameRate="25"', [1.2, 2]],
    ['ticks at ttp:tickRate', 'begin="10t" end="25t"', 'ttp:tickRate="10"', [1, 2.5]],
    ['ticks with no tick rate but a frame rate', 'begin="25t" end="50t"', 'ttp:frameRate="25"', [1, 2]],
    ['a begin and a dur', 'begin="1s" dur="500ms"', '', [1, 1.5]],
    ['a dur shorter than the end', 'begin="1s" end="5s" dur="1s"', '', [1, 2]],
  ])('when a p is timed by %s, then its cue has those times in seconds', (_what, timing, root, expected) => {
    expect(times(ttmlToCues(ttml(`<p ${timing}>text</p>`, root)))).toEqual([expected]);
  });

  it.each([
    ['no end nor dur anywhere', 'begin="1s"'],
    ['an end before its begin', 'begin="2s" end="1s"'],
    ['an end at its begin', 'begin="2s" end="2s"'],
    ['a malformed begin', 'begin="1,5s" end="2s"'],
    ['a malformed end', 'begin="1s" end="soon"'],
    ['a negative time', 'begin="-1s" end="2s"'],
  ])('when a p has %s, then it makes no cue', (_what, timing) => {
    expect(ttmlToCues(ttml(`<p begin="0s" end="9s">kept</p><p ${timing}>dropped</p>`))).toEqual([cue(0, 9, 'kept')]);
  });
});

describe('TTML timing inherited from body and div', () => {
  it('when a div has a begin, then its ps count from it', () => {
    const xml = `<tt ${TT}><body begin="10s"><div begin="5s"><p begin="1s" end="2s">a</p></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(16, 17, 'a')]);
  });

  it('when a p gives no times, then it takes its div interval', () => {
    const xml = `<tt ${TT}><body><div begin="00:00:03.000" end="00:00:04.500"><p>a</p></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(3, 4.5, 'a')]);
  });

  it('when a p runs past its div end, then its cue ends with the div, and one beginning after it is dropped', () => {
    const xml = `<tt ${TT}><body dur="10s"><div begin="2s" end="4s"><p end="9s">clipped</p><p begin="3s" end="5s">after</p></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(2, 4, 'clipped')]);
  });

  it('when divs nest, then begins add up through every level', () => {
    const xml = `<tt ${TT}><body><div begin="1s"><div begin="1s"><div begin="1s"><p begin="1s" dur="1s">a</p></div></div></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(4, 5, 'a')]);
  });

  it('when a div is a seq time container, then each p begins where the previous one ended', () => {
    const xml = `<tt ${TT}><body><div timeContainer="seq" begin="1s"><p dur="2s">a</p><p begin="1s" dur="1s">b</p><p dur="1s">c</p></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(1, 3, 'a'), cue(4, 5, 'b'), cue(5, 6, 'c')]);
  });

  it('when ps come out of order, then the cues are sorted by start', () => {
    const xml = ttml('<p begin="5s" end="6s">c</p><p begin="1s" end="3s">a</p><p begin="1s" end="2s">b</p>');
    expect(ttmlToCues(xml).map((c) => c.text)).toEqual(['b', 'a', 'c']);
  });
});

describe('TTML text', () => {
  it('when a p holds spans and brs, then the text of the spans is kept and each br starts a line', () => {
    const xml = ttml('<p begin="1s" end="2s"><span tts:color="yellow">Hello</span> <span tts:fontStyle="italic">big</span> world<br/>second <br />line</p>');
    expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'Hello big world\nsecond\nline')]);
  });

  it('when text has runs of white space and newlines, then they collapse to one space and lines are trimmed', () => {
    const xml = ttml('<p begin="1s" end="2s">\n    Two   words\n   and\tmore   <br/>   next   </p>');
    expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'Two words and more\nnext')]);
  });

  it('when xml:space="preserve" is set on a div, then its ps keep their spaces and newlines, and a span can reset it', () => {
    const xml = `<tt ${TT}><body><div xml:space="preserve"><p begin="1s" end="2s">a  b\n  c<span xml:space="default">  d   e</span></p></div></body></tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'a  b\n  c d e')]);
  });

  it('when a p holds metadata, CDATA and entities, then the metadata is left out and the rest read', () => {
    const xml = ttml(
      '<p begin="1s" end="2s"><metadata><ttm:desc xmlns:ttm="http://www.w3.org/ns/ttml#metadata">hidden</ttm:desc></metadata>R&amp;B <![CDATA[<tag>]]> &#233;&#x263A;</p>',
    );
    expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'R&B <tag> é☺')]);
  });

  it('when a p has only white space or empty brs, then it makes no cue', () => {
    expect(ttmlToCues(ttml('<p begin="1s" end="2s">  <br/> <span> </span> </p>'))).toEqual([]);
  });

  it('when the document uses the old ttaf1 namespace or none, then it is read as TTML', () => {
    const p = '<body><div><p begin="1s" end="2s">a</p></div></body>';
    expect(ttmlToCues(`<tt xmlns="http://www.w3.org/2006/10/ttaf1">${p}</tt>`)).toEqual([cue(1, 2, 'a')]);
    expect(ttmlToCues(`<tt>${p}</tt>`)).toEqual([cue(1, 2, 'a')]);
  });

  it('when the document prefixes TTML elements as EBU-TT-D does, then it is read the same, and foreign elements are left out', () => {
    const xml = `<tt:tt xmlns:tt="http://www.w3.org/ns/ttml" xmlns:x="urn:x" xmlns:ttp="http://www.w3.org/ns/ttml#parameter" ttp:tickRate="10"><tt:body><tt:div>
      <tt:p begin="10t" end="20t"><tt:span>a</tt:span><tt:br/><x:span>hidden</x:span>b</tt:p><x:p begin="1s" end="2s">hidden</x:p></tt:div></tt:body></tt:tt>`;
    expect(ttmlToCues(xml)).toEqual([cue(1, 2, 'a\nb')]);
  });

  it('when the root is not tt, then the document is refused', () => {
    expect(() => ttmlToCues('<html><body><div><p begin="1s" end="2s">a</p></div></body></html>')).toThrow(refusal('unsupported_source'));
  });
});

describe('WebVTT out of cues', () => {
  it('when cues are written, then the file has the header, hh:mm:ss.ttt timings and the text escaped', () => {
    const vtt = cuesToWebVtt([cue(3723.4, 3724.0005, 'Fish & chips <3\nA --> B'), cue(360_000, 360_001.5, 'late')]);
    expect(vtt).toBe('WEBVTT\n\n01:02:03.400 --> 01:02:04.001\nFish &amp; chips &lt;3\nA --&gt; B\n\n100:00:00.000 --> 100:00:01.500\nlate\n');
  });

  it('when cue text has blank lines or carriage returns, then no blank line ends the cue early', () => {
    expect(cuesToWebVtt([cue(1, 2, 'a\r\n\r\n  \nb\rc')])).toBe('WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na\nb\nc\n');
  });

  it('when cues are out of order, empty, not finite, or end at their start once rounded, then only the good ones come out in order', () => {
    const cues = [
      cue(5, 6, 'b'),
      cue(1, 1.0004, 'too short'),
      cue(2, 3, ' \n '),
      cue(NaN, 3, 'nan'),
      cue(-1, 3, 'negative'),
      cue(1, Infinity, 'endless'),
      cue(1, 2, 'a'),
    ];
    expect(cuesToWebVtt(cues)).toBe('WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na\n\n00:00:05.000 --> 00:00:06.000\nb\n');
  });
});

/** An ISO BMFF box; a size other than the real one can be forced. */
function box(type: string, body: Buffer, size = 8 + body.length): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(size);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}
const u32 = (...values: number[]) => Buffer.concat(values.map((value) => Buffer.from([value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255])));
const fullBox = (type: string, version: number, flags: number, ...fields: Buffer[]) => box(type, Buffer.concat([u32(version * 2 ** 24 + flags), ...fields]));

/** A moof for one track whose trun lists these sample sizes (or, with `defaultSize`, whose tfhd gives one for all). */
function moof(sizes: number[], options: { defaultSize?: number; count?: number } = {}): Buffer {
  const build = (dataOffset: number) => {
    const tfhd = options.defaultSize === undefined ? fullBox('tfhd', 0, 0x020000, u32(1)) : fullBox('tfhd', 0, 0x020010, u32(1, options.defaultSize));
    const perSample = options.defaultSize === undefined ? 0x300 : 0x100;
    const entries = sizes.map((size) => (options.defaultSize === undefined ? u32(1000, size) : u32(1000)));
    const trun = fullBox('trun', 0, 0x1 | perSample, u32(options.count ?? sizes.length, dataOffset), ...entries);
    return box('moof', Buffer.concat([fullBox('mfhd', 0, 0, u32(1)), box('traf', Buffer.concat([tfhd, fullBox('tfdt', 0, 0, u32(0)), trun]))]));
  };
  return build(build(0).length + 8);
}

/** A media segment: styp, then a moof and an mdat for each of these lists of samples. */
function segment(...fragments: string[][]): Buffer {
  const parts = fragments.flatMap((documents) => {
    const samples = documents.map((document) => Buffer.from(document, 'utf8'));
    return [moof(samples.map((sample) => sample.length)), box('mdat', Buffer.concat(samples))];
  });
  return Buffer.concat([box('styp', Buffer.from('msdh\0\0\0\0msdhmsix', 'latin1')), ...parts]);
}

const first = ttml('<p begin="00:00:01.000" end="00:00:02.000">first</p>');
const second = ttml('<p begin="00:00:02.500" end="00:00:04.000">second</p><p begin="00:00:03.000" end="00:00:04.000">third</p>');

describe('stpp segments', () => {
  it('when a moof lists two sample sizes, then its mdat is split into two documents whose cues come out on the presentation timeline', () => {
    const documents = stppDocuments(segment([first, second]));
    expect(documents).toEqual([first, second]);
    expect(documents.flatMap(ttmlToCues)).toEqual([cue(1, 2, 'first'), cue(2.5, 4, 'second'), cue(3, 4, 'third')]);
  });

  it('when samples take tfhd default size, then the mdat is split by it', () => {
    const samples = ['<tt>a</tt>', '<tt>b</tt>', '<tt>c</tt>'];
    const data = Buffer.concat([moof([10, 10, 10], { defaultSize: 10 }), box('mdat', Buffer.from(samples.join('')))]);
    expect(stppDocuments(data)).toEqual(samples);
  });

  it('when a segment holds two fragments, then each mdat is split by the moof before it', () => {
    expect(stppDocuments(segment([first], [second, first]))).toEqual([first, second, first]);
  });

  it('when an mdat has no moof before it, then it is one document, read as UTF-8 without its BOM and NUL padding', () => {
    const data = Buffer.concat([box('ftyp', Buffer.from('isom')), box('mdat', Buffer.concat([Buffer.from('\uFEFF<tt>é</tt>'), Buffer.alloc(3)]))]);
    expect(stppDocuments(data)).toEqual(['<tt>é</tt>']);
  });
});

describe('hostile stpp segments', () => {
  const good = segment([first]);
  const withSize = (data: Buffer, at: number, size: number) => {
    const copy = Buffer.from(data);
    copy.writeUInt32BE(size, at);
    return copy;
  };
  const mdatAt = good.indexOf('mdat') - 4;

  it('when the last box has size 0, then it runs to the end of the segment', () => {
    expect(stppDocuments(withSize(good, mdatAt, 0))).toEqual([first]);
  });

  it('when a box has size 1, then its 64-bit size is read, and one past the end stops the walk', () => {
    const payload = Buffer.from('<tt>x</tt>');
    const large = (size: bigint) => {
      const largeSize = Buffer.alloc(8);
      largeSize.writeBigUInt64BE(size);
      return Buffer.concat([u32(1), Buffer.from('mdat'), largeSize, payload]);
    };
    expect(stppDocuments(large(BigInt(16 + payload.length)))).toEqual(['<tt>x</tt>']);
    expect(stppDocuments(Buffer.concat([box('mdat', payload), large(2n ** 64n - 1n)]))).toEqual(['<tt>x</tt>']);
  });

  it.each([
    ['huge', 0xffffffff],
    ['smaller than its header', 5],
    ['one byte too large', 8 + Buffer.byteLength(first) + 1],
  ])('when the mdat size is %s, then the walk stops there and the segment gives nothing', (_what, size) => {
    expect(stppDocuments(withSize(good, mdatAt, size))).toEqual([]);
  });

  it('when the segment is cut inside its second fragment, then the first fragment documents still come out', () => {
    const data = segment([first], [second]);
    expect(stppDocuments(data.subarray(0, data.length - 10))).toEqual([first]);
  });

  it('when a trun claims more samples than it has bytes for, then the moof is ignored and the mdat is one document', () => {
    const data = Buffer.concat([moof([4, 4], { count: 0xffffffff }), box('mdat', Buffer.from('abcdefgh'))]);
    expect(stppDocuments(data)).toEqual(['abcdefgh']);
  });

  it('when sample sizes run past the mdat, then the samples that fit come out', () => {
    expect(stppDocuments(Buffer.concat([moof([4, 40]), box('mdat', Buffer.from('abcdefgh'))]))).toEqual(['abcd']);
  });

  it('when a segment holds more samples than the bound, then it is refused', () => {
    const sizes = new Array<number>(MAX_SAMPLES + 1).fill(1);
    expect(() => stppDocuments(Buffer.concat([moof(sizes), box('mdat', Buffer.alloc(sizes.length, 0x61))]))).toThrow(refusal('source_too_large'));
    const atBound = sizes.slice(1);
    expect(stppDocuments(Buffer.concat([moof(atBound), box('mdat', Buffer.alloc(atBound.length, 0x61))]))).toHaveLength(MAX_SAMPLES);
  });

  it('when a segment is larger than the bound, then it is refused', () => {
    expect(() => stppDocuments(Buffer.alloc(MAX_SEGMENT_BYTES + 1))).toThrow(refusal('source_too_large'));
  });

  it('when the segment is garbage bytes, then nothing comes out and nothing throws', () => {
    const garbage = Buffer.from(Array.from({ length: 100_000 }, (_, index) => (index * 7919 + 13) % 251));
    expect(stppDocuments(garbage)).toEqual([]);
    expect(stppDocuments(Buffer.alloc(0))).toEqual([]);
  });
});

describe('hostile TTML', () => {
  /** Runs `work` and fails if it took longer than `ms`: xmldom alone takes minutes on these. */
  const quick = <T>(ms: number, work: () => T): T => {
    const started = performance.now();
    try {
      return work();
    } finally {
      expect(performance.now() - started).toBeLessThan(ms);
    }
  };

  it('when a document declares entities (billion laughs), then it is refused without expanding them', () => {
    const lol = ['<!ENTITY lol "lol">', ...Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ''};`.repeat(10)}">`)].join('');
    const xml = `<?xml version="1.0"?><!DOCTYPE tt [${lol}]>${ttml('<p begin="1s" end="2s">&lol9;</p>').replace(/^<\?xml[^>]*>/, '')}`;
    expect(() => quick(1000, () => ttmlToCues(xml))).toThrow(refusal('unsupported_source'));
  });

  it('when text refers to an entity that XML does not define, then the document is refused', () => {
    expect(() => ttmlToCues(ttml('<p begin="1s" end="2s">&lol9;</p>'))).toThrow(refusal('unsupported_source'));
  });

  it.each([
    ['spans', '<span>'],
    ['divs', '<div>'],
  ])('when %s nest 100,000 deep, then the document is refused at once', (_what, open) => {
    const close = open.replace('<', '</');
    const xml = ttml(`<p begin="1s" end="2s">${open.repeat(100_000)}a${close.repeat(100_000)}</p>`);
    expect(() => quick(2000, () => ttmlToCues(xml))).toThrow(refusal('source_too_large'));
  });

  it('when a document is larger than 5 MB, in characters or in UTF-8 bytes, then it is refused', () => {
    expect(() => ttmlToCues(ttml(`<p begin="1s" end="2s">${'a'.repeat(5 * 1024 * 1024)}</p>`))).toThrow(refusal('source_too_large'));
    expect(() => ttmlToCues(ttml(`<p begin="1s" end="2s">${'é'.repeat(2_700_000)}</p>`))).toThrow(refusal('source_too_large'));
  });

  it('when a document has more cues than the bound, then it is refused', () => {
    const p = '<p begin="1s" end="2s">a</p>';
    expect(ttmlToCues(ttml(p.repeat(MAX_CUES)))).toHaveLength(MAX_CUES);
    expect(() => ttmlToCues(ttml(p.repeat(MAX_CUES + 1)))).toThrow(refusal('source_too_large'));
  });

  it.each([
    ['a million unclosed processing instructions', `<tt ${TT}>${'<?x'.repeat(1_000_000)}</tt>`, 'unsupported_source'],
    ['half a million unclosed CDATA sections', `<tt ${TT}>${'<![CDATA['.repeat(500_000)}</tt>`, 'unsupported_source'],
    ['a million unclosed comments', `<tt ${TT}>${'<!--'.repeat(1_000_000)}</tt>`, 'unsupported_source'],
    ['a million unclosed start tags', `<tt ${TT}>${'<a>'.repeat(1_000_000)}`, 'source_too_large'],
    ['100,000 element names', `<tt ${TT}>${Array.from({ length: 100_000 }, (_, i) => `<n${i}></n${i}>`).join('')}</tt>`, 'source_too_large'],
    ['100,000 end tags that match nothing', ttml(`<p begin="1s" end="2s">${'<span></b>'.repeat(100_000)}</p>`), 'unsupported_source'],
  ])('when a document holds %s, then it is refused in linear time', (_what, xml, code) => {
    expect(() => quick(2000, () => ttmlToCues(xml))).toThrow(refusal(code));
  });

  it.each([
    ['garbage bytes', Buffer.from(Array.from({ length: 100_000 }, (_, index) => (index * 7919 + 13) % 251)).toString('latin1')],
    ['an empty string', ''],
    ['text without markup', 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nhello\n'],
    ['a truncated document', ttml('<p begin="1s" end="2s">a</p>').slice(0, -20)],
    ['two roots', `${ttml('')}<tt/>`],
    ['an unquoted attribute', '<tt><body><div><p begin=1s end="2s">a</p></div></body></tt>'],
  ])('when the document is %s, then it is refused as not TTML', (_what, xml) => {
    expect(() => ttmlToCues(xml)).toThrow(refusal('unsupported_source'));
  });
});

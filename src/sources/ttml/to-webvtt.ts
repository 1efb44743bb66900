import { DownloadError } from '../../core/errors.ts';
import { webVttTimestamp } from '../../media/webvtt-timing.ts';
import { cueText, isTtml, preservesSpace } from './text.ts';
import { parseTime, timeRates, type TimeParameters, type TimeRates } from './time.ts';
import { guardXml } from './xml-guard.ts';
import { parseXmlRoot, type XmlElement } from './xmldom.ts';

// TTML (IMSC1 text profile, DFXP, EBU-TT-D) to WebVTT, the only subtitle format ffmpeg reads here.
// The document is hostile text: it is size-checked, its markup checked by a linear pass (see
// xml-guard.ts), and xmldom's first complaint of any kind ends the parse. xmldom loads nothing
// (no DTD, no external entity) and expands no entity declared in the document.
//
// Timing: body, div and p take `begin`, `end` and `dur`. In a `par` time container (the default)
// begin and end count from the container's begin; in a `seq` one from the previous sibling's end.
// An element ends at the earliest of its end, its begin plus dur, and its container's end; one
// that gives neither end nor dur ends with its container. A p whose end is nowhere given (so
// never ends) or is not after its begin is dropped, and so is a p or div with a malformed time,
// with all it holds (and, in a seq container, the siblings after it). Times are on the
// document's own timeline: for an stpp sample, the presentation timeline (see stpp.ts).

export type Cue = {
  /** Seconds. */
  start: number;
  /** Seconds, after start. */
  end: number;
  /** Plain text (not escaped), lines separated by `\n`, none of them blank. */
  text: string;
};

export const MAX_TTML_BYTES = 5 * 1024 * 1024;
export const MAX_CUES = 100_000;

const notTtml = (why: string) => new DownloadError('unsupported_source', `The subtitles are not a TTML document (${why}).`);

function parseTtmlRoot(xml: string): XmlElement {
  if (xml.length > MAX_TTML_BYTES || Buffer.byteLength(xml, 'utf8') > MAX_TTML_BYTES) {
    throw new DownloadError('source_too_large', `The TTML subtitles are larger than ${MAX_TTML_BYTES} bytes.`);
  }
  const text = guardXml(xml.charCodeAt(0) === 0xfeff ? xml.slice(1) : xml);
  // xmldom's messages quote the document: a generic one carries no hostile text further.
  const root = parseXmlRoot(text, () => {
    throw notTtml('xmldom refused it');
  });
  if (!root || !isTtml(root, 'tt')) throw notTtml('its root is not a tt element');
  return root;
}

const PARAMETERS = ['frameRate', 'frameRateMultiplier', 'subFrameRate', 'tickRate'] as const;

/** The `ttp:` timing parameters on the root, whichever prefix names their namespace. */
function rootRates(tt: XmlElement): TimeRates {
  const found: TimeParameters = {};
  for (const attribute of Array.from(tt.attributes)) {
    const name = PARAMETERS.find((parameter) => parameter === attribute.localName);
    const isParameter = attribute.namespaceURI ? attribute.namespaceURI.endsWith('#parameter') : attribute.prefix === 'ttp';
    if (name && isParameter) found[name] = attribute.value;
  }
  return timeRates(found);
}

type Interval = { begin: number; end: number };

class CueCollector {
  readonly cues: Cue[] = [];

  constructor(private readonly rates: TimeRates) {}

  /** Seconds, null for an attribute absent, NaN for one malformed (which makes the whole interval NaN, so dropped). */
  private time(element: XmlElement, name: string): number | null {
    const value = element.getAttribute(name);
    return value ? (parseTime(value, this.rates) ?? NaN) : null;
  }

  /** The element's active interval, its times counted from `base`, within its container's end. */
  interval(element: XmlElement, base: number, containerEnd: number): Interval {
    const offset = this.time(element, 'begin');
    const end = this.time(element, 'end');
    const dur = this.time(element, 'dur');
    const begin = base + (offset ?? 0);
    return { begin, end: Math.min(containerEnd, end === null ? Infinity : base + end, dur === null ? Infinity : begin + dur) };
  }

  /** The cues of a body or div's descendants; recursion as deep as divs nest, which the XML guard bounds. */
  container(element: XmlElement, own: Interval, preserve: boolean): void {
    const sequential = element.getAttribute('timeContainer') === 'seq';
    let base = own.begin;
    for (let child = element.firstChild; child; child = child.nextSibling) {
      const kind = isTtml(child, 'div') ? 'div' : isTtml(child, 'p') ? 'p' : null;
      if (kind === null) continue;
      const timed = child as XmlElement;
      const interval = this.interval(timed, base, own.end);
      if (sequential) base = Math.max(interval.begin, interval.end);
      const childPreserves = preservesSpace(timed, preserve);
      if (kind === 'div') this.container(timed, interval, childPreserves);
      else if (interval.end > interval.begin && Number.isFinite(interval.end)) this.add(interval, cueText(timed, childPreserves));
    }
  }

  private add(interval: Interval, text: string): void {
    if (text === '') return;
    if (this.cues.length >= MAX_CUES) throw new DownloadError('source_too_large', `The TTML subtitles hold more than ${MAX_CUES} cues.`);
    this.cues.push({ start: interval.begin, end: interval.end, text });
  }
}

/** The cues of a TTML document, sorted by start; throws a DownloadError for one refused as hostile or not TTML. */
export function ttmlToCues(xml: string): Cue[] {
  const tt = parseTtmlRoot(xml);
  const collector = new CueCollector(rootRates(tt));
  const preserve = preservesSpace(tt, false);
  for (let child = tt.firstChild; child; child = child.nextSibling) {
    if (!isTtml(child, 'body')) continue;
    collector.container(child, collector.interval(child, 0, Infinity), preservesSpace(child, preserve));
    break;
  }
  return collector.cues.sort((a, b) => a.start - b.start || a.end - b.end);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** Cue text as WebVTT cue payload: escaped (so no `-->` either), one line per line, no blank line to end the cue early. */
function payload(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => line.replace(/[&<>]/g, (c) => ESCAPES[c]!))
    .join('\n');
}

/** A WebVTT file of these cues, in start order, at millisecond precision; cues empty or not after their start once rounded are left out. */
export function cuesToWebVtt(cues: readonly Cue[]): string {
  const blocks = ['WEBVTT\n'];
  const shown = cues
    .map((cue) => ({ start: Math.round(cue.start * 1000), end: Math.round(cue.end * 1000), text: payload(cue.text) }))
    .filter((cue) => Number.isSafeInteger(cue.start) && Number.isSafeInteger(cue.end) && cue.start >= 0 && cue.end > cue.start && cue.text !== '');
  for (const cue of shown.sort((a, b) => a.start - b.start || a.end - b.end)) {
    blocks.push(`${webVttTimestamp(cue.start)} --> ${webVttTimestamp(cue.end)}\n${cue.text}\n`);
  }
  return blocks.join('\n');
}

import type { MpdElement, RepresentationInfo, TimelineEntry } from 'mpd-parser';
import { DownloadError } from '../../core/errors.ts';

// mpd-parser turns a few bytes of XML into as many objects as the XML asks for: a SegmentTemplate
// with endNumber="2000000000", a SegmentTimeline entry with r="1e12", BaseURLs repeated on every
// level (it multiplies them out). So what it will make is counted first, from the XML and from its
// own inherited attributes, and a manifest that asks for too much is refused before it is built.

/** Representations times their BaseURL combinations: far above real ladders, far below a bomb. */
const MAX_REPRESENTATIONS = 256;
/** Every Representation is expanded, not only the chosen ones, so the sum is bounded too. */
const TOTAL_SEGMENTS_FACTOR = 4;
/** `$Number%0<width>d$` pads to that width, for every segment. */
const MAX_TEMPLATE_WIDTH = 20;

function tooLarge(what: string): DownloadError {
  return new DownloadError('source_too_large', `The DASH manifest ${what}.`);
}

function childCount(element: MpdElement | null, name: string): number {
  if (!element) return 0;
  let count = 0;
  for (const node of Array.from(element.childNodes)) if (node.tagName === name) count++;
  return count;
}

/** Refuses a manifest whose BaseURL combinations would make too many Representations. */
export function refuseTooManyRepresentations(mpd: MpdElement): void {
  let total = 0;
  const baseUrls = (element: MpdElement | null) => Math.max(1, childCount(element, 'BaseURL'));
  for (const representation of Array.from(mpd.getElementsByTagName('Representation'))) {
    const adaptationSet = representation.parentNode;
    const period = adaptationSet?.parentNode ?? null;
    total += baseUrls(representation) * baseUrls(adaptationSet) * baseUrls(period) * baseUrls(mpd);
    if (total > MAX_REPRESENTATIONS) throw tooLarge(`describes more than ${MAX_REPRESENTATIONS} Representations (counting their BaseURL alternatives)`);
  }
  for (const template of Array.from(mpd.getElementsByTagName('SegmentTemplate'))) {
    for (const name of ['media', 'initialization']) {
      const width = /%0(\d+)d/.exec(template.getAttribute(name) ?? '');
      if (width && Number(width[1]) > MAX_TEMPLATE_WIDTH) throw tooLarge(`pads segment numbers to ${width[1]} digits`);
    }
  }
}

type Numbers = Record<string, unknown>;
const numberOf = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

/** As mpd-parser's segmentRange.static: endNumber, else the period (or presentation) over the segment duration. */
function countByDuration(attributes: Numbers): number {
  const endNumber =
    typeof attributes.endNumber === 'string' || typeof attributes.endNumber === 'number' ? Number.parseInt(String(attributes.endNumber), 10) : NaN;
  if (!Number.isNaN(endNumber)) return endNumber;
  const segmentSeconds = numberOf(attributes.duration, NaN) / numberOf(attributes.timescale, 1);
  const seconds = typeof attributes.periodDuration === 'number' ? attributes.periodDuration : numberOf(attributes.sourceDuration, NaN);
  return seconds / segmentSeconds;
}

/** As mpd-parser's parseByTimeline: r + 1 for each S, a negative r repeating to the next S or the end. */
function countByTimeline(attributes: Numbers, timeline: TimelineEntry[]): number {
  const timescale = numberOf(attributes.timescale, 1);
  const end = numberOf(attributes.sourceDuration, NaN) * timescale;
  let count = 0;
  let time = -1;
  timeline.forEach((entry, index) => {
    const duration = numberOf(entry.d, NaN);
    const start = numberOf(entry.t, 0);
    if (time < 0 || (start && start > time)) time = start;
    const repeat = numberOf(entry.r, 0);
    const next = timeline[index + 1];
    const entries = repeat >= 0 ? repeat + 1 : ((next ? numberOf(next.t, NaN) : end) - time) / duration;
    count += entries;
    time += duration * entries;
  });
  return count;
}

/**
 * How many segments mpd-parser will make for one Representation (as its generateSegments: @duration
 * first, then a SegmentTimeline); Infinity when it would never stop. A SegmentBase is one segment,
 * but a @duration on it is still expanded to find that segment's length.
 */
export function segmentsToBuild(info: RepresentationInfo): number {
  const { template, list, base, segmentTimeline } = info.segmentInfo;
  const source = template ?? base ?? list;
  if (!source) return 0;
  const attributes: Numbers = { ...info.attributes, ...source };
  if (attributes.duration) return countByDuration(attributes);
  if (segmentTimeline && !(base && !template)) return countByTimeline(attributes, segmentTimeline);
  return template || base ? 1 : 0;
}

/** Refuses a manifest that would make more segments than MAX_SEGMENTS allows. */
export function refuseTooManySegments(representations: RepresentationInfo[], maxSegments: number): void {
  let total = 0;
  for (const info of representations) {
    const count = segmentsToBuild(info);
    // NaN (nothing to count from) makes no segments in mpd-parser either; a negative count neither.
    if (!(count <= maxSegments) && !Number.isNaN(count)) {
      throw tooLarge(`asks for ${count} segments in Representation "${String(info.attributes.id)}", over the limit of ${maxSegments} (MAX_SEGMENTS)`);
    }
    total += Number.isNaN(count) ? 0 : Math.max(0, count);
    if (total > maxSegments * TOTAL_SEGMENTS_FACTOR) throw tooLarge(`asks for more than ${maxSegments * TOTAL_SEGMENTS_FACTOR} segments in all`);
  }
}

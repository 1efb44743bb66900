import type { MpdElement, RepresentationInfo } from 'mpd-parser';
import { DownloadError } from '../../core/errors.ts';
import { keySystemName } from '../key-systems.ts';

// What the planner refuses, read from the XML itself: mpd-parser computes a live window instead
// of saying the MPD is live, and it keeps ContentProtection only from AdaptationSets and only for
// the key systems it knows, so a protected Representation could otherwise slip through.

export function refuseLive(mpd: MpdElement): void {
  if (mpd.getAttribute('type') === 'dynamic') {
    throw new DownloadError('unsupported_source', 'This is a live DASH stream (MPD type "dynamic"); live DASH is not supported.');
  }
}

function protectionOf(element: MpdElement): MpdElement[] {
  return Array.from(element.childNodes).filter((node): node is MpdElement => node.tagName === 'ContentProtection');
}

/** Throws when any of these Representations, or the AdaptationSet holding it, declares ContentProtection. */
export function refuseProtected(mpd: MpdElement, representationIds: ReadonlySet<string>): void {
  for (const representation of Array.from(mpd.getElementsByTagName('Representation'))) {
    if (!representationIds.has(representation.getAttribute('id') ?? '')) continue;
    const adaptationSet = representation.parentNode;
    const protections = [...protectionOf(representation), ...(adaptationSet ? protectionOf(adaptationSet) : [])];
    if (protections.length === 0) continue;
    const schemes = protections.map((node) => {
      const scheme = (node.getAttribute('schemeIdUri') ?? '').toLowerCase();
      return keySystemName(scheme) ?? scheme;
    });
    throw new DownloadError('drm_protected', `The DASH stream is DRM-protected (${[...new Set(schemes)].join(', ')}).`);
  }
}

/**
 * Throws when a SegmentTemplate or SegmentList gives its segments a @duration that mpd-parser reads
 * as no positive number ("0", "0.5", "-1"): it then makes one segment of the whole presentation, so
 * the file would hold the first segment alone and pass for the whole stream.
 */
export function refuseUncountedSegments(representations: RepresentationInfo[]): void {
  for (const info of representations) {
    const source = info.segmentInfo.template ?? info.segmentInfo.list;
    const duration: unknown = source && { ...info.attributes, ...source }.duration;
    if (source && duration !== undefined && !(typeof duration === 'number' && duration > 0)) {
      throw new DownloadError(
        'unsupported_source',
        `DASH Representation "${String(info.attributes.id)}" gives its segments a duration of ${Number(duration)}, so they cannot be counted.`,
      );
    }
  }
}

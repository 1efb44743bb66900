import type { MpdElement } from 'mpd-parser';
import { DownloadError } from '../../core/errors.ts';

// What the planner refuses, read from the XML itself: mpd-parser computes a live window instead
// of saying the MPD is live, and it keeps ContentProtection only from AdaptationSets and only for
// the key systems it knows, so a protected Representation could otherwise slip through.

const KEY_SYSTEMS: Record<string, string> = {
  'urn:mpeg:dash:mp4protection:2011': 'Common Encryption',
  'urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed': 'Widevine',
  'urn:uuid:9a04f079-9840-4286-ab92-e65be0885f95': 'PlayReady',
  'urn:uuid:94ce86fb-07ff-4f43-adb8-93d2fa968ca2': 'FairPlay',
  'urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e': 'ClearKey',
  'urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b': 'ClearKey',
};

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
      return KEY_SYSTEMS[scheme] ?? scheme;
    });
    throw new DownloadError('drm_protected', `The DASH stream is DRM-protected (${[...new Set(schemes)].join(', ')}).`);
  }
}

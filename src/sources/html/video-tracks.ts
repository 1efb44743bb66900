import type { HtmlVisitor } from './walk-html.ts';

// The subtitle and caption tracks of a page's videos: `<track>` elements whose nearest enclosing
// media element is a `<video>` (inside it at any depth, as its `<source>`s are taken; one of an
// `<audio>` inside the video is the audio's). The content of a `<template>` is inert, so no track
// in one counts. Comments and the text of scripts hold no elements, so the walk never shows their
// tracks. A page is an attacker's: tracks are read in the same walk as the rest of the page, and
// what they say is cleaned before anything else sees it.

/** A `<track>` as written (entities decoded), but for its `src`'s surrounding spaces; `src` not yet resolved. */
export type TrackElement = { src: string; srclang: string | undefined; label: string | undefined };

/**
 * Distinct `src`s read at most. Far more than a page offers honestly (a few are handed back); past
 * this a page that names a million tracks would hold all of them in memory for nothing.
 */
const MAX_TRACKS_READ = 1024;

/**
 * Whether a `<track>` of this `kind` is subtitles or captions. `kind` is an enumerated attribute:
 * ASCII case-insensitive, `subtitles` when it is missing, `metadata` when it is anything else
 * (`""` and `" captions "` included).
 */
export function isSubtitleKind(kind: string | undefined): boolean {
  if (kind === undefined) return true;
  // Outside ASCII only the Kelvin sign (to `k`) and `İ` (to `i` and a dot) lower-case into ASCII: neither can spell these words.
  const name = kind.toLowerCase();
  return name === 'subtitles' || name === 'captions';
}

const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/;
/** A longer `srclang` is no tag; its length is checked before the pattern reads megabytes of it. */
const MAX_LANGUAGE_CHARS = 64;

/** The `srclang`, trimmed, when it looks like a BCP 47 tag (`en`, `pt-BR`, `zh-Hans-CN`); else null. */
export function trackLanguage(srclang: string | undefined): string | null {
  const tag = srclang?.trim();
  return tag !== undefined && tag.length <= MAX_LANGUAGE_CHARS && LANGUAGE_TAG.test(tag) ? tag : null;
}

/**
 * A visitor for walkHtml that gathers the subtitle and caption `<track>`s of `<video>`s into
 * `tracks`, in document order, the first of each `src` (as written) only.
 */
export function videoTrackReader(): { visitor: HtmlVisitor; tracks: TrackElement[] } {
  const tracks: TrackElement[] = [];
  const sources = new Set<string>();
  // The open `<video>` and `<audio>` elements, innermost last: whether each is a video, and its depth.
  const media: { video: boolean; depth: number }[] = [];
  const visitor: HtmlVisitor = {
    open({ name, attributes, depth }, ancestors) {
      if (name === 'video' || name === 'audio') {
        media.push({ video: name === 'video', depth });
        return;
      }
      if (name !== 'track' || media.at(-1)?.video !== true || ancestors.has('template')) return;
      if (sources.size === MAX_TRACKS_READ || !isSubtitleKind(attributes.get('kind'))) return;
      const src = attributes.get('src')?.trim();
      // An empty src names no file (resolved, it would be the page itself).
      if (!src || sources.has(src)) return;
      sources.add(src);
      tracks.push({ src, srclang: attributes.get('srclang'), label: attributes.get('label') });
    },
    text() {},
    close(depth) {
      if (media.at(-1)?.depth === depth) media.pop();
    },
  };
  return { visitor, tracks };
}

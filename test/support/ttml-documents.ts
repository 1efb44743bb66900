import type { Cue } from '../../src/sources/ttml/to-webvtt.ts';

// TTML documents and the cues expected of them, for the tests of the TTML reader in both tiers.

/** The TTML namespaces, for the root of a document written out in full. */
export const TT = 'xmlns="http://www.w3.org/ns/ttml" xmlns:ttp="http://www.w3.org/ns/ttml#parameter" xmlns:tts="http://www.w3.org/ns/ttml#styling"';
/** A TTML document of these `p`s (or other body content), with these attributes on its root. */
export const ttml = (body: string, root = '') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<tt ${TT} ${root}>\n  <body>\n    <div>${body}</div>\n  </body>\n</tt>\n`;
export const cue = (start: number, end: number, text: string): Cue => ({ start, end, text });

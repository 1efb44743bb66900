import type { components } from '../../generated/api.ts';

// A clip as the contract spells it and as the rows and the worker hold it: two columns, both null
// for the whole video.

export type ClipBody = components['schemas']['Clip'];

/** The part of the media asked for, in seconds; `endSeconds` null for the end of the media. */
export type Clip = { startSeconds: number; endSeconds: number | null };

/** The columns a clip is stored in. */
export type ClipColumns = { clipStartSeconds: number | null; clipEndSeconds: number | null };

export function clipColumns(body: ClipBody | undefined | null): ClipColumns {
  return body ? { clipStartSeconds: body.start_seconds, clipEndSeconds: body.end_seconds ?? null } : { clipStartSeconds: null, clipEndSeconds: null };
}

export function clipOfColumns(row: ClipColumns): Clip | null {
  return row.clipStartSeconds === null ? null : { startSeconds: row.clipStartSeconds, endSeconds: row.clipEndSeconds };
}

/** What the API shows: the clip with its end spelt out (null for the end of the media), or null. */
export function presentClip(row: ClipColumns): ClipBody | null {
  return row.clipStartSeconds === null ? null : { start_seconds: row.clipStartSeconds, end_seconds: row.clipEndSeconds };
}

/** The clip as a request hash takes it: a body without a clip and one with `end_seconds` absent or null differ only as they should. */
export function canonicalClip(body: ClipBody | undefined | null): [number, number | null] | null {
  return body ? [body.start_seconds, body.end_seconds ?? null] : null;
}

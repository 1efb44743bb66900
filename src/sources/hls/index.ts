import type { Mode } from '../../core/mode.ts';
import type { Quality } from '../../core/quality.ts';
import type { SourceHttp } from '../../net/guarded-client.ts';
import { fetchDocument } from '../document-limits.ts';
import type { DocumentSandbox } from '../sandbox/document-sandbox.ts';
import type { MediaPlan, Track } from '../types.ts';

/**
 * The tracks an HLS playlist resolves to. `url` is where `text` was fetched from (after redirects):
 * relative URIs resolve against it. A master playlist is narrowed to one variant by `quality`, plus
 * its audio rendition when the audio is a playlist of its own. Every playlist is read by
 * the sandbox, away from the thread that serves the API.
 */
export type HlsInput = {
  http: SourceHttp;
  sandbox: DocumentSandbox;
  url: string;
  /** The playlist's bytes, moved to the sandbox (the caller's view of them is empty afterwards). */
  bytes: Uint8Array;
  quality: Quality;
  mode: Mode;
  maxSegments: number;
  signal: AbortSignal;
};

export async function planHls(input: HlsInput): Promise<MediaPlan> {
  const top = await input.sandbox.hls(
    { bytes: input.bytes, url: input.url, quality: input.quality, mode: input.mode, expect: 'any', maxSegments: input.maxSegments },
    input.signal,
  );
  if (top.type === 'media') return { tracks: [top.track] };
  // Only the playlists the mode wants are read, so no segment of the others is ever asked for.
  const tracks = await Promise.all([
    ...(top.variantUrl ? [loadTrack(input, top.variantUrl, top.variantKind)] : []),
    ...(top.audioUrl ? [loadTrack(input, top.audioUrl, 'audio')] : []),
  ]);
  return { tracks, subtitles: top.subtitles };
}

async function loadTrack(input: HlsInput, url: string, kind: Track['kind']): Promise<Track> {
  const fetched = await fetchDocument(input.http, url, 'hls', input.signal);
  const reading = await input.sandbox.hls(
    { bytes: fetched.body, url: fetched.url, quality: input.quality, mode: input.mode, expect: kind, maxSegments: input.maxSegments },
    input.signal,
  );
  // Only a master can hand back anything but a track, and a master was not expected here.
  if (reading.type !== 'media') throw new Error('a playlist expected to be a media playlist was read as a master');
  return reading.track;
}

import type { SourceHttp } from '../net/guarded-client.ts';
import type { Transfer } from '../storage/transfer.ts';

/** What a source needs to fetch one download into its working directory. */
export type SourceContext = {
  url: string;
  http: SourceHttp;
  workDir: string;
  /** Where a direct file is kept as it arrives, and found again by a later attempt. */
  transfer: Transfer;
  signal: AbortSignal;
  maxFileBytes: number;
  /** Connections a direct file may be fetched over at once, in ranged pieces (1: one connection). */
  directConnections: number;
  /** The version of the file an earlier attempt kept bytes of, as direct/version.ts stores it: for If-Range, and to tell a changed file. */
  validator: string | null;
  rememberValidator(validator: string | null): Promise<void>;
  /** Called as bytes arrive; the caller decides how often to record it. */
  progress(downloadedBytes: number, totalBytes: number | null): void;
  /** Called once every byte is fetched, before ffmpeg works on them: the end of the fetch. */
  processing(): Promise<void>;
  /** Called as each other phase of the work ends, so that a slow download says where its time went. */
  phaseEnded(phase: 'resolve' | 'remux' | 'probe'): void;
};

export type FetchedFile = {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** The Content-Type the source declared; the file's first bytes are the better witness. */
  declaredType: string | null;
};

/**
 * A direct file also carries the name its source gave it, if any. Its sha256 is asked for when
 * wanted (not for a file ffmpeg makes again), so that it can be computed beside ffmpeg's check of
 * the file, on the other core, rather than after it.
 */
export type FetchedDirectFile = Omit<FetchedFile, 'sha256'> & { sha256: () => Promise<string>; dispositionName: string | null };

// Streams (HLS, DASH) are planned first, as tracks of segments, and then fetched the same way
// whatever the manifest format was.

export type ByteRange = { offset: number; length: number };

/** AES-128 (CBC, PKCS#7) as HLS's EXT-X-KEY describes it; `iv` is 16 bytes in hex (a plan crosses threads as plain data). */
export type SegmentKey = { method: 'AES-128'; uri: string; iv: string };

/** `durationSeconds`: how long the manifest says it plays, when it says so believably (segment-seconds.ts). */
export type Segment = { url: string; byteRange?: ByteRange; key?: SegmentKey; durationSeconds?: number };

/** One elementary stream (video, audio, or both muxed): its init section, then its segments in order. */
export type Track = {
  kind: 'video' | 'audio' | 'muxed';
  init?: { url: string; byteRange?: ByteRange; key?: SegmentKey };
  segments: Segment[];
};

/**
 * A subtitle track a source offers: one file (`file`: WebVTT or TTML, as its first bytes say), an
 * HLS media playlist of WebVTT segments (`hls`), or fMP4 segments of TTML samples (`stpp`: `url`
 * the init segment, `segments` the media). Fetched only when the download asks for its language.
 */
export type SubtitleOffer = { url: string; language: string | null; label: string | null } & (
  { format: 'file' | 'hls' } | { format: 'stpp'; segments: string[] }
);

/** What a manifest resolves to: the tracks to fetch and merge into one file, and the subtitles it offers. */
export type MediaPlan = { tracks: Track[]; subtitles?: SubtitleOffer[] };

/**
 * How the segments went, for the log: a slow stream says whether retries or one slow segment cost
 * it, and how many slow ones were asked for a second time (hedged).
 */
export type SegmentStats = { count: number; retried: number; hedged: number; slowest_ms: number };

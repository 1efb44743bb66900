import type { components } from '../../generated/api.ts';
import type { Clip } from '../core/clip.ts';
import { DownloadError } from '../core/errors.ts';
import type { AudioFormat, Mode } from '../core/mode.ts';
import type { Quality } from '../core/quality.ts';
import type { FileCodecs } from '../media/codecs.ts';
import type { SourceResponse } from '../net/guarded-client.ts';
import type { ResponseKind } from './detect.ts';
import type { DocumentSandbox } from './sandbox/document-sandbox.ts';
import type { FetchedFile, SegmentStats, SourceContext, SubtitleOffer } from './types.ts';

// The seam between "a URL" and "a media file": every way of reading a URL (a direct file, an HLS or
// DASH stream, a page that embeds one, a site through an extractor) is a SourceReader, and the
// dispatcher (index.ts) tries them in the order of a list.

/** How the media was found: `page` is a page that embeds it, `site` a page read by an extractor. */
export type SourceKind = components['schemas']['SourceKind'];

/** What a download knows of its source once it is found (the Download's `source`). */
export type SourceFound = { kind: SourceKind; extractor: string | null; title: string | null };

export type MediaContext = SourceContext & {
  quality: Quality;
  /** What the file is to hold: readers fetch no track the mode throws away. */
  mode: Mode;
  /** With mode `audio`: the format the file is to be in. */
  audioFormat: AudioFormat | null;
  /** The subtitle languages asked for (tags, or `all`); empty for none. */
  subtitles: readonly string[];
  /** The part of the media to keep; null for all of it. */
  clip: Clip | null;
  ffmpeg: string;
  sandbox: DocumentSandbox;
  maxSegments: number;
  segmentConcurrency: number;
  /** Called once it is known how the media is read, and again as more is learnt (an extractor's title). */
  found(source: SourceFound): void;
};

export type FetchedMedia = FetchedFile & {
  source: SourceKind;
  /** For HLS and DASH: how many segments, how many retries, the slowest one. */
  segments?: SegmentStats;
  mime: string;
  ext: string;
  durationSeconds: number | null;
  width: number | null;
  height: number | null;
  /** Its codecs and subtitle tracks, read by the same ffmpeg run as the above. */
  codecs: FileCodecs;
  /** A better file name than the URL's: a page's or a site's title, or the name a direct file's source gave it. */
  title: string | null;
  /** The subtitle tracks the source offers beside the media, whether asked for or not. */
  subtitles?: SubtitleOffer[];
  /**
   * Set by whatever already cut the media to the download's clip (a reader that fetched only the
   * clip's part, or the cut after a whole fetch): the time in the source at which what was kept
   * starts (its first keyframe), so that side-loaded subtitles can be moved by as much.
   */
  keptFromSeconds?: number;
};

/** The first answer to a URL, its first bytes read to tell what it is, and the body still whole. */
export type Arrival = {
  /** The URL asked for; `response.url` is where the answer came from, after redirects. */
  url: string;
  response: SourceResponse;
  /** What the answer's bytes, type and URL say it is; null for nothing the built-in readers know. */
  detected: ResponseKind | null;
  /** The first bytes of the body (about 1 KiB), which are still in it: what told what it is. */
  head: Buffer;
};

/**
 * A reader looked and found no media (as opposed to a document it refused, too large or unreadable):
 * the next reader that takes the URL may look in its own way.
 */
export class NothingFound extends DownloadError {
  constructor(message: string) {
    super('unsupported_source', message);
  }
}

export interface SourceReader {
  readonly kind: SourceKind;
  /** Whether this reader reads the URL the arrival answered. */
  takes(arrival: Arrival): boolean;
  /**
   * Fetches the media into the working directory. Only the first reader tried reads the arrival's
   * body; one tried after it (an extractor after a page in which nothing was found) gets the URL.
   * Throws NothingFound when it finds nothing, so that the next reader may try.
   */
  read(ctx: MediaContext, arrival: Arrival): Promise<FetchedMedia>;
  /**
   * Asked before the URL is: fetches what an earlier attempt of the download kept of this reader's
   * kind, from where it stopped, without asking what the URL is again; null when nothing was kept.
   */
  resume?(ctx: MediaContext): Promise<FetchedMedia | null>;
}

import { setMaxListeners } from 'node:events';
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { Clip } from '../../core/clip.ts';
import { clipOutOfRange, DownloadError } from '../../core/errors.ts';
import { fileWriter } from '../../files/file-writer.ts';
import { addSpan, gapsOf, spanBytes, type Span } from '../../files/spans.ts';
import { clipSpans, type ClipSpans } from '../../media/mp4-clip.ts';
import { headerAt, IndexFault, indexFault, MAX_INDEX_BYTES } from '../../media/mp4-index.ts';
import { ByteMeter, tooLarge } from '../../net/byte-meter.ts';
import { contentLength, type SourceResponse } from '../../net/guarded-client.ts';
import type { SourceContext } from '../types.ts';
import { openPiece, rangedVersion, type Version } from './fetch-pieces.ts';
import { MIN_PIECE_BYTES, Piece } from './pieces.ts';
import { streamPiece } from './stream-piece.ts';

// A clip of a direct MP4 whose source answers ranges of one version: its box headers and its index
// (`moov`) first, in small ranges, then only the byte spans of the samples the clip needs, each
// written at its own offset into a file of the source's length whose other bytes are never written
// (a sparse file: the holes read as zeros and take no disk). ffmpeg cuts that file exactly as it
// would the whole one. Whatever stands in the way (a box layout this does not follow, an index
// that cannot be read so, a source that stops answering ranges) gives the file back to the whole
// fetch: a clip is never worse off than without this.

/** Box headers are read out of ranges of this size, so that the small boxes after one come with it. */
const WINDOW_BYTES = 64 * 1024;
/** Top-level boxes walked at most: a whole MP4 has a handful; a fragmented one is left to the whole fetch. */
const MAX_BOXES = 64;

/** The version of an arrival's file to fetch a clip of in ranges; null when it is fetched whole. */
export function clipRangesVersion(response: SourceResponse, head: Buffer): Version | null {
  if (response.status !== 200 || headerAt(head, 0, head.length)?.type !== 'ftyp') return null;
  return rangedVersion(response, contentLength(response));
}

/** The ranges fetched cannot do: the file is to be fetched whole. */
class Unranged extends Error {}

/**
 * Fetches what `clip` of the file needs into `file` (the source's length, sparse). Null when it
 * is to be fetched whole instead (nothing is left at `file`); throws clip_out_of_range for a start
 * at or past the end its index gives, before any sample is fetched.
 */
export async function fetchClipRanges(ctx: SourceContext, clip: Clip, version: Version, file: string): Promise<ClipSpans | null> {
  const handle = await open(file, 'w+');
  let fetched: ClipSpans | null = null;
  try {
    // A length no file here can have (past the file system's largest) is left to the whole fetch, which refuses it.
    if (!(await lengthened(handle, version.total))) return null;
    const fetcher = new RangeFetcher(ctx, version, file, handle);
    const plan = await planOf(fetcher, clip);
    if (!plan) return null;
    if (clip.startSeconds >= plan.durationSeconds) throw clipOutOfRange(clip.startSeconds, plan.durationSeconds);
    await fetcher.fetchAll(plan.spans);
    fetched = plan;
    return plan;
  } catch (error) {
    if (error instanceof Unranged) return null;
    throw error;
  } finally {
    await handle.close();
    if (!fetched) await rm(file, { force: true });
  }
}

/** Whether the file could be given the source's length. */
async function lengthened(handle: FileHandle, length: number): Promise<boolean> {
  try {
    await handle.truncate(length);
    return true;
  } catch {
    return false;
  }
}

/** Reads the file's top-level boxes and its index, and what the clip needs of it; null when it cannot be read so. */
async function planOf(fetcher: RangeFetcher, clip: Clip): Promise<ClipSpans | null> {
  const total = fetcher.total;
  const mdats: Span[] = [];
  let moov: Buffer | null = null;
  let at = 0;
  for (let boxes = 0; at < total; boxes++) {
    if (boxes === MAX_BOXES) return null;
    await fetcher.ensure(at, Math.min(total, at + 16), WINDOW_BYTES);
    const header = headerAt(await fetcher.read(at, Math.min(16, total - at)), 0, Math.min(16, total - at));
    // Bytes that are no box end the walk, as they end ffmpeg's; a box past the end is a file cut short.
    if (!header) break;
    const end = header.size === null ? total : at + header.size;
    if (end > total || header.type === 'moof') return null;
    const body = at + header.headerBytes;
    if (header.type === 'mdat') mdats.push({ start: body, end });
    if (header.type === 'moov' && !moov) {
      if (end - body > MAX_INDEX_BYTES) return null;
      await fetcher.ensure(body, end);
      moov = await fetcher.read(body, end - body);
    }
    at = end;
  }
  // Every sample the index names must lie in the file's media data: a lying index is the whole fetch's to judge.
  if (!moov || indexFault(moov, mdats, total) !== null) return null;
  try {
    return clipSpans(moov, clip);
  } catch (error) {
    if (error instanceof IndexFault) return null;
    throw error;
  }
}

/** Ranges of one version of the file, each written at its offset into the local file; what is fetched is metered as the download's progress. */
class RangeFetcher {
  private kept: Span[] = [];
  private meter: ByteMeter;

  constructor(
    private readonly ctx: SourceContext,
    private readonly version: Version,
    private readonly file: string,
    private readonly handle: Awaited<ReturnType<typeof open>>,
  ) {
    this.meter = new ByteMeter(ctx, null, 0);
  }

  get total(): number {
    return this.version.total;
  }

  /** Fetches what is not yet fetched of [start, end); when some is, at least `window` bytes from `start` (short of the file's end). */
  async ensure(start: number, end: number, window = 0): Promise<void> {
    if (this.missing([{ start, end }]).length === 0) return;
    const reach = Math.min(this.total, Math.max(end, start + window));
    for (const gap of this.missing([{ start, end: reach }])) await this.fetch(gap, this.ctx.signal);
  }

  async read(at: number, length: number): Promise<Buffer> {
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await this.handle.read(bytes, 0, length, at);
    return bytes.subarray(0, bytesRead);
  }

  /**
   * Fetches what is not yet fetched of `spans`, over up to DIRECT_CONNECTIONS at once, a large span
   * cut into pieces; progress now counts towards all the clip fetches. Any failure stops them all.
   */
  async fetchAll(spans: readonly Span[]): Promise<void> {
    const gaps = this.missing(spans);
    const wanted = spanBytes(gaps);
    // Known before a byte of it comes: a clip over the limit is refused as a whole file over it is.
    if (this.meter.bytes + wanted > this.ctx.maxFileBytes) throw tooLarge(this.ctx.maxFileBytes, this.meter.bytes + wanted);
    this.meter = new ByteMeter(this.ctx, this.meter.bytes + wanted, this.meter.bytes);
    const connections = Math.max(1, this.ctx.directConnections);
    const pieceBytes = Math.max(MIN_PIECE_BYTES, Math.ceil(wanted / connections));
    const pieces = gaps.flatMap((gap) => {
      const cut: Span[] = [];
      for (let start = gap.start; start < gap.end; start += pieceBytes) cut.push({ start, end: Math.min(gap.end, start + pieceBytes) });
      return cut;
    });
    const stop = new AbortController();
    const signal = AbortSignal.any([this.ctx.signal, stop.signal]);
    setMaxListeners(8 * connections, signal);
    let failure: unknown = null;
    const connection = async () => {
      try {
        for (let piece = pieces.shift(); piece; piece = pieces.shift()) await this.fetch(piece, signal);
      } catch (error) {
        failure ??= error;
        stop.abort(error);
      }
    };
    await Promise.all(Array.from({ length: Math.min(connections, pieces.length) }, connection));
    if (failure) throw failure as Error;
  }

  /** The parts of `spans` not fetched yet. */
  private missing(spans: readonly Span[]): Span[] {
    return spans.flatMap((span) =>
      gapsOf(this.kept, span.end)
        .filter((gap) => gap.end > span.start)
        .map((gap) => ({ start: Math.max(gap.start, span.start), end: gap.end })),
    );
  }

  private async fetch(span: Span, signal: AbortSignal): Promise<void> {
    const piece = new Piece(span.start, span.end);
    const opened = await openPiece(this.ctx, piece, this.version, signal).catch((error: unknown) => {
      // A file that changed under its ranges (or a source whose every answer names a new version) is fetched whole, in one answer.
      if (error instanceof DownloadError && error.code === 'source_http_error') throw new Unranged(error.message);
      throw error;
    });
    if ('refused' in opened) throw new Unranged(opened.refused.message);
    await streamPiece({ writer: (start) => fileWriter(this.file, start) }, opened, this.meter, { signal });
    this.kept = addSpan(this.kept, span.start, span.end);
  }
}

import { setMaxListeners } from 'node:events';
import { DownloadError } from '../../core/errors.ts';
import { hashThread } from '../../files/hash-thread.ts';
import { gapsOf, spanBytes } from '../../files/spans.ts';
import { WrittenPrefix } from '../../files/written-prefix.ts';
import type { BulkResponse } from '../../net/bulk-get.ts';
import { ByteMeter, tooLarge } from '../../net/byte-meter.ts';
import { discard, type SourceResponse } from '../../net/guarded-client.ts';
import type { SourceContext } from '../types.ts';
import { MIN_PIECE_BYTES, Piece, PieceQueue } from './pieces.ts';
import { contentRange, type Resumption } from './resume.ts';
import { streamPiece, type PieceFetch } from './stream-piece.ts';
import { ifRangeOf, sameVersion, versionOf, type FileVersion } from './version.ts';

// The rest of a direct file, over one connection or several. A single connection is capped by
// latency and, on most video hosts and CDNs, by a per-connection throttle; so when a file's first
// connection is seen to be slow, and its source answers ranges of one stable version, the rest is
// shared out over up to DIRECT_CONNECTIONS. A fast source (a file that one connection brings
// within a second or two) is left to one connection: more would cost requests and CPU for nothing.
// Sharing starts only once a ranged request for the file's last piece comes back as a 206 of the
// same version; a source that refuses it costs that one request. A piece that comes back of another
// version fails the attempt; the next one finds the change through If-Range and starts the file
// over, never splicing two versions.

/**
 * `sha256` gives the hash, which the hashing thread reads back as the file grows whole from its
 * start; null when bytes an earlier attempt kept are in it, whose hash is taken once it is whole.
 */
export type FetchedRest = { sizeBytes: number; sha256: (() => Promise<string>) | null };

/** How often the first connection's speed is looked at. */
const WATCH_MS = 50;
/**
 * A connection is slow when it has been for this long: one that waits on the disk for a moment
 * (its slabs both being written), or starts while the machine is busy, is not; and its first bytes
 * come in a burst (what the source's socket held), which alone would make it look fast.
 */
const SLOW_FOR_MS = 250;
/** A file that one connection will bring within this, at the speed seen, is not shared out. */
const SHARE_IF_LEFT_MS = 1000;
/** Nor is a connection this fast: past it the bound is the machine's CPU and disk, not the connection. */
const SHARE_BELOW_BYTES_PER_SECOND = 64 * 1024 * 1024;
/**
 * A file whose length lies in [SPLIT_AT_ONCE_FROM_BYTES, SPLIT_AT_ONCE_BELOW_BYTES) is shared out
 * as soon as its first answer comes, not once it is seen to be slow: behind a per-connection
 * throttle the wait costs a mid-size file most of its time, while a fast source brings it in a
 * fraction of a second over several connections as over one. A larger one waits to be seen slow:
 * from a fast source one connection is faster than several (docs/performance.md).
 */
const SPLIT_AT_ONCE_FROM_BYTES = 2 * MIN_PIECE_BYTES;
const SPLIT_AT_ONCE_BELOW_BYTES = 256 * 1024 * 1024;
/**
 * The rest of a file this large is asked for again to be read into reused buffers: the wait for
 * the second answer (a round trip or three) and the bytes the first sent meanwhile are then small
 * beside it.
 */
const BULK_FROM_BYTES = 32 * 1024 * 1024;
/**
 * A file shared out is cut into this many pieces per connection, taken in order: the file is then
 * whole from its start close behind the fastest connection, so its hash keeps up instead of taking
 * most of the file after the last byte, and a throttled source's burst for each new request is had
 * more often.
 */
const PIECES_PER_CONNECTION = 4;

/** `onWhole` hears how far the file is whole from its start, as that grows, when nothing was kept before. */
export async function fetchRest(ctx: SourceContext, source: Resumption, onWhole?: (end: number) => void): Promise<FetchedRest> {
  const { response, total, kept } = source;
  if (total !== null && total > ctx.maxFileBytes) {
    discard(response);
    throw tooLarge(ctx.maxFileBytes, total);
  }
  // What an earlier attempt kept may be in a bucket rather than in the local file until it is whole.
  const prefix = kept.length === 0 ? new WrittenPrefix() : null;
  const hash = prefix && hashThread.follow(ctx.transfer.file);
  if (prefix && hash) {
    prefix.follow((end) => hash.upTo(end));
    if (onWhole) prefix.follow(onWhole);
  }
  try {
    const sizeBytes = await fetchRestInto(ctx, source, prefix);
    // Asked for at once, so that the thread's job ends whether or not anyone waits for it.
    const digest = hash?.digest(sizeBytes, ctx.signal);
    digest?.catch(() => {});
    return { sizeBytes, sha256: digest ? () => digest : null };
  } catch (error) {
    hash?.drop();
    throw error;
  }
}

/** The rest of the file into the transfer, over one connection or several; where the file ends. */
async function fetchRestInto(ctx: SourceContext, source: Resumption, prefix: WrittenPrefix | null): Promise<number> {
  const { response, from, total, kept } = source;
  const version = splittable(ctx, response, total);
  const gaps = total === null ? [] : gapsOf(kept, total);
  // Pieces kept beyond the first gap (an attempt over several connections was cut): the last gap
  // is asked for first; a source that answers it has the rest fetched in pieces as well.
  if (version && gaps.length > 1) {
    const queue = new PieceQueue(gaps, ctx.transfer.grain);
    const last = await openPiece(ctx, queue.claim('last')!, version, ctx.signal).catch((error: unknown) => {
      discard(response);
      throw error;
    });
    if (!('refused' in last)) {
      const front = queue.claim('first')!;
      front.reach = version.total;
      const connections = new Connections(ctx, queue, version, new ByteMeter(ctx, total, spanBytes(kept)), prefix);
      await connections.run([{ piece: front, response, responseEnd: total }, last], 'at once');
      return version.total;
    }
  }
  // The rest over the response at hand, shared out if it is slow. It runs to the end of the file,
  // or, when the source answers ranges of this version and the file's end is kept already, to the
  // end of the one gap.
  const front = new Piece(from, total ?? Infinity);
  const keptAfter = version !== null && gaps.length === 1;
  if (keptAfter) front.end = gaps[0]!.end;
  const queue = new PieceQueue([], ctx.transfer.grain);
  queue.adopt(front);
  const connections = new Connections(ctx, queue, version, new ByteMeter(ctx, total, keptAfter ? spanBytes(kept) : from), prefix);
  const atOnce = version !== null && kept.length === 0 && version.total >= SPLIT_AT_ONCE_FROM_BYTES && version.total < SPLIT_AT_ONCE_BELOW_BYTES;
  const first: PieceFetch = { piece: front, response, responseEnd: total };
  const opened = atOnce ? first : await readIntoBuffers(ctx, first, version);
  await connections.run([opened], version ? (atOnce ? 'now' : 'when slow') : 'never');
  return total ?? front.position;
}

/**
 * The rest of a large file asked for again over a connection of its own, read into reused buffers
 * (bulk-get.ts) rather than through Node's client, which the first response came through and which
 * reads more slowly (docs/performance.md). The first response is let go once the second has answered; a source that refuses
 * the range keeps sending its first.
 */
async function readIntoBuffers(ctx: SourceContext, fetch: PieceFetch, version: Version | null): Promise<PieceFetch> {
  if (!version || fetch.piece.left < BULK_FROM_BYTES) return fetch;
  const again = await openPiece(ctx, fetch.piece, version, ctx.signal).catch((error: unknown) => {
    discard(fetch.response);
    throw error;
  });
  if ('refused' in again) return fetch;
  discard(fetch.response);
  return again;
}

/**
 * The version of the file being fetched, which every piece must be of, and where it is: the URL
 * the first response came from, at the end of any redirects (asked for again per attempt, not per
 * piece).
 */
export type Version = { url: string; ifRange: string; validators: FileVersion; total: number };

/** The version to fetch pieces of; null when the file cannot be fetched in pieces: one connection allowed, or no ranges of one version. */
function splittable(ctx: SourceContext, response: SourceResponse, total: number | null): Version | null {
  return ctx.directConnections < 2 ? null : rangedVersion(response, total);
}

/**
 * The version of the file `response` is of, to ask for ranges of; null when there is none: no
 * length, no ranges offered, or no validator that promises the same bytes (a strong ETag, or
 * Last-Modified where there is no ETag).
 */
export function rangedVersion(response: SourceResponse, total: number | null): Version | null {
  const validators = versionOf(response.headers);
  const ifRange = ifRangeOf(validators);
  const offersRanges = response.status === 206 || /\bbytes\b/i.test(response.headers['accept-ranges'] ?? '');
  if (total === null || !offersRanges || !ifRange) return null;
  return { url: response.url, ifRange, validators, total };
}

/** The connections of one attempt at a file: any failure stops them all. */
class Connections {
  private readonly stop = new AbortController();
  private readonly signal: AbortSignal;
  private readonly tasks: Array<Promise<void>> = [];
  private failure: unknown = null;
  private refusal: Error | null = null;

  constructor(
    private readonly ctx: SourceContext,
    private readonly queue: PieceQueue,
    private readonly version: Version | null,
    private readonly meter: ByteMeter,
    /** Told of every span written, when the file is hashed as it grows. */
    private readonly prefix: WrittenPrefix | null,
  ) {
    this.signal = AbortSignal.any([ctx.signal, this.stop.signal]);
    // Each connection listens to it while it asks, reads and writes.
    setMaxListeners(8 * ctx.directConnections, this.signal);
  }

  /**
   * Reads the responses at hand, and has the rest of the pieces fetched over further connections:
   * at once (pieces already waiting), now (the first piece shared out before it is seen to be slow), as soon as it is seen to be slow (for SLOW_FOR_MS), or never.
   */
  async run(opened: PieceFetch[], more: 'at once' | 'now' | 'when slow' | 'never'): Promise<void> {
    for (const fetch of opened) this.connect(fetch);
    if (more === 'at once') this.connectMore(opened.length);
    // The first connection's piece shared out before it is seen to be slow.
    if (more === 'now') this.connect(this.share(opened[0]!.piece));
    let watch: NodeJS.Timeout | undefined;
    if (more === 'when slow') {
      const [{ piece }] = opened as [PieceFetch];
      // Where the piece was at each look, over the last SLOW_FOR_MS.
      const looks = [{ at: Date.now(), position: piece.position }];
      watch = setInterval(() => {
        const now = { at: Date.now(), position: piece.position };
        looks.push(now);
        if (now.at - looks[0]!.at < SLOW_FOR_MS) return;
        while (now.at - looks[1]!.at >= SLOW_FOR_MS) looks.shift();
        const bytesPerSecond = ((now.position - looks[0]!.position) * 1000) / Math.max(1, now.at - looks[0]!.at);
        const slow = bytesPerSecond < SHARE_BELOW_BYTES_PER_SECOND && (piece.left * 1000) / Math.max(1, bytesPerSecond) > SHARE_IF_LEFT_MS;
        if (piece.left === 0 || !slow) return;
        clearInterval(watch);
        this.connect(this.share(piece));
      }, WATCH_MS);
    }
    try {
      await this.settled();
    } finally {
      clearInterval(watch);
    }
    // Every connection stopped with pieces left: the source refused the ones that would have taken them.
    if (!this.failure && this.queue.unfinished) {
      this.connect(null);
      await this.settled();
    }
    if (this.failure) throw this.failure as Error;
    if (this.queue.unfinished) throw this.refusal ?? new DownloadError('source_http_error', 'The source stopped answering ranges of the file.', true);
  }

  /** Until every connection has ended; one may start while others run. */
  private async settled(): Promise<void> {
    for (let seen = 0; seen < this.tasks.length;) {
      const started = this.tasks.slice(seen);
      seen += started.length;
      await Promise.all(started);
    }
  }

  /**
   * Cuts the rest of the first connection's piece into pieces and asks for the last; once the
   * source answers it, the rest of the connections start. A refusal gives it all back.
   */
  private async share(front: Piece): Promise<PieceFetch | null> {
    if (!this.queue.shareOut(front, this.ctx.directConnections * PIECES_PER_CONNECTION)) return null;
    const last = this.queue.claim('last')!;
    const opened = await openPiece(this.ctx, last, this.version!, this.signal);
    if ('refused' in opened) {
      this.queue.giveBack(last);
      this.queue.unshare(front);
      return null;
    }
    this.connectMore(2);
    return opened;
  }

  private connectMore(running: number): void {
    for (let n = running; n < this.ctx.directConnections; n++) this.connect(null);
  }

  /**
   * A connection: the piece at hand (or the one `start` gives), then whatever piece is next, until
   * none is left or the source refuses it. A `start` that gives none (the source refused to share
   * out) ends it: taking halves would only be refused again.
   */
  private connect(start: PieceFetch | Promise<PieceFetch | null> | null): void {
    const task = (async () => {
      let job: PieceFetch | null = null;
      try {
        job = await start;
        if (start && !job) return;
        for (;;) {
          if (!job) {
            const piece = this.version && this.queue.next();
            if (!piece) return;
            const opened = await openPiece(this.ctx, piece, this.version, this.signal);
            if ('refused' in opened) {
              // Too many connections for the source (a 429 or a 503, say): the others share its piece.
              this.refusal = opened.refused;
              this.queue.giveBack(piece);
              return;
            }
            job = opened;
          }
          const fetch: PieceFetch = job;
          await streamPiece(this.ctx.transfer, fetch, this.meter, {
            signal: this.signal,
            landed: this.prefix ? (from, to) => this.prefix!.landed(from, to) : undefined,
          });
          this.queue.done(fetch.piece);
          job = null;
        }
      } catch (error) {
        this.failure ??= error;
        this.stop.abort(error);
        if (job) discard(job.response);
      }
    })();
    // It never rejects: a failure is kept, and thrown once every connection has stopped.
    this.tasks.push(task);
  }
}

/**
 * A ranged GET of a piece, of the version being fetched. A 206 of exactly that range is the piece;
 * another version is a changed file, which fails the attempt; anything else is the source refusing
 * this connection.
 */
export async function openPiece(
  ctx: SourceContext,
  piece: Piece,
  { url, ifRange, validators, total }: Version,
  signal: AbortSignal,
): Promise<PieceFetch | { refused: Error }> {
  // Asked for as it is now: another connection may take its second half while the answer comes.
  const [first, last] = [piece.position, piece.end - 1];
  const headers = { range: `bytes=${first}-${last}`, 'if-range': ifRange };
  let response: SourceResponse | BulkResponse;
  try {
    response = await ctx.http.getBulk(url, { headers, signal });
    if (response.status === 206 && response.length === null) {
      // A range framed otherwise (chunked, say) is read through Node's client.
      discard(response);
      response = await ctx.http.get(url, { headers, signal });
    }
  } catch (error) {
    if (signal.aborted || (error instanceof DownloadError && error.code === 'blocked_address')) throw error;
    return { refused: error as Error };
  }
  const version = versionOf(response.headers);
  if (!sameVersion(version, validators)) {
    discard(response);
    throw new DownloadError('source_http_error', 'The file changed at the source while its pieces were fetched; it starts over.', true);
  }
  const range = contentRange(response.headers['content-range']);
  const exact = response.status === 206 && range?.first === first && range.last === last && range.total === total;
  // A piece must name the version it is of, as the first response did.
  if (!exact || ifRangeOf(version) !== ifRange) {
    discard(response);
    return { refused: new DownloadError('source_http_error', `The source answered HTTP ${response.status} to a range of the file.`, true) };
  }
  piece.reach = last + 1;
  return { piece, response, responseEnd: last + 1 };
}

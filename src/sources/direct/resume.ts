import { DownloadError } from '../../core/errors.ts';
import { frontOf, type Span } from '../../files/spans.ts';
import { contentLength, discard, requireStatus, type SourceResponse } from '../../net/guarded-client.ts';
import type { SourceContext } from '../types.ts';
import { ifRangeOf, parseStoredVersion, sameVersion, storedVersion, versionOf } from './version.ts';

// A retry after a reset or a crash continues from the bytes kept so far (ctx.transfer: on this
// disk, or in a bucket's upload parts) with a Range request, guarded by If-Range so that a changed
// file starts over instead of splicing. This decides which response the rest of the file comes
// from, and where in the file its body starts.

export type Resumption = {
  response: SourceResponse;
  /** Where in the file the body starts: the end of the bytes kept at its start, or 0 when the file starts over. */
  from: number;
  /** The spans of this version of the file kept already (none when it starts over). */
  kept: Span[];
  /** The whole file's length, when the source says it. */
  total: number | null;
  /** Every byte is kept already: the body was let go, and the response tells only the file's type. */
  complete: boolean;
};

/** The URL an earlier attempt kept bytes of, to resume from; null when there are none. */
export async function resumableDirect(ctx: SourceContext): Promise<string | null> {
  return (await ctx.transfer.held())?.url ?? null;
}

/**
 * The response to read ctx.url from. `opened` is a response to a plain GET of it that the caller
 * already has (it looked at the first bytes to know the URL is a file); it serves when there is
 * nothing to resume.
 */
export async function resumeOrStart(ctx: SourceContext, opened?: SourceResponse): Promise<Resumption> {
  const held = await ctx.transfer.held();
  // Kept bytes that do not start the file (another connection's piece) are resumed all the same.
  let kept = held?.kept ?? [];
  const have = frontOf(kept);
  if (opened && kept.length > 0) discard(opened);
  let response = opened && kept.length === 0 ? opened : await request(ctx, kept.length > 0 ? have : null);

  if (kept.length > 0 && response.status === 416) {
    // Everything was kept already (a crash between the last byte and the file's completion) or the file shrank.
    const total = totalFromContentRange(response.headers['content-range']);
    discard(response);
    // Complete only when the kept bytes are the whole of the file they began as, not a front that a
    // source now says is all there is.
    if (total === have && sameLength(held?.total ?? null, total) && sameAsKept(ctx, response)) {
      return { response, from: have, kept, total, complete: true };
    }
    kept = [];
    response = await request(ctx, null);
  }
  if (
    kept.length > 0 &&
    (response.status !== 206 ||
      contentRange(response.headers['content-range'])?.first !== have ||
      !sameAsKept(ctx, response) ||
      !sameLength(held?.total ?? null, totalFromContentRange(response.headers['content-range'])))
  ) {
    // The source ignored the range, or the file changed (If-Range, or a source that ignores
    // If-Range but says which version it sent): start again from zero.
    kept = [];
    if (response.status !== 200) {
      discard(response);
      response = await request(ctx, null);
    }
  }
  requireStatus(response, [200, 206]);
  const startsAt = response.status === 206 ? (contentRange(response.headers['content-range'])?.first ?? null) : 0;
  if (startsAt !== (kept.length === 0 ? 0 : have)) {
    // A range nobody asked for, or not where it was asked: its bytes have no place in the file.
    discard(response);
    throw new DownloadError(
      'source_http_error',
      `The source answered with bytes from ${startsAt ?? 'an unreadable Content-Range'} where the file was asked for from ${kept.length === 0 ? 0 : have}.`,
    );
  }
  const total = response.status === 206 ? totalFromContentRange(response.headers['content-range']) : contentLength(response);
  if (kept.length === 0) await startOver(ctx, response, total);
  return { response, from: kept.length === 0 ? 0 : have, kept, total, complete: false };
}

/** Drops what is kept and remembers what a later attempt resumes from: this URL, this version of its file, this length. */
async function startOver(ctx: SourceContext, response: SourceResponse, total: number | null): Promise<void> {
  await ctx.transfer.begin(ctx.url, total);
  await ctx.rememberValidator(storedVersion(versionOf(response.headers)));
}

/**
 * Whether a resumed range is of a file as long as the one the kept bytes began: a source may keep
 * its validator while the file changes (or lie about it), and a file of another length is another
 * file, whatever its validator says.
 */
function sameLength(recorded: number | null, total: number | null): boolean {
  return recorded === null || total === null || recorded === total;
}

/** A GET of the file from byte `from` on, of the version kept; of the whole file, with no condition, when `from` is null. */
function request(ctx: SourceContext, from: number | null): Promise<SourceResponse> {
  const headers: Record<string, string> = {};
  if (from !== null) {
    headers.range = `bytes=${from}-`;
    const validator = ifRangeOf(parseStoredVersion(ctx.validator));
    if (validator) headers['if-range'] = validator;
  }
  return ctx.http.get(ctx.url, { headers, signal: ctx.signal });
}

/** Whether a response is of the file version the kept bytes came from, as far as both say. */
function sameAsKept(ctx: SourceContext, response: SourceResponse): boolean {
  return sameVersion(parseStoredVersion(ctx.validator), versionOf(response.headers));
}

/** The parts of a Content-Range of bytes: the first and last byte sent, and the file's length when given. */
export function contentRange(value: string | undefined): { first: number; last: number; total: number | null } | null {
  const match = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value ?? '');
  if (!match) return null;
  return { first: Number(match[1]), last: Number(match[2]), total: match[3] === '*' ? null : Number(match[3]) };
}

/** The file's length a Content-Range gives, also in a 416's `bytes * /length`. */
function totalFromContentRange(value: string | undefined): number | null {
  const match = /\/(\d+)$/.exec(value ?? '');
  return match ? Number(match[1]) : null;
}

import { sha256OfFile } from '../../files/hash.ts';
import type { SourceResponse } from '../../net/guarded-client.ts';
import type { FetchedDirectFile, SourceContext } from '../types.ts';
import { dispositionName } from './disposition.ts';
import { fetchRest } from './fetch-pieces.ts';
import { resumeOrStart } from './resume.ts';

// A URL that is itself the media file: taken up where an earlier attempt left it (resume.ts), then
// the rest of its body kept (ctx.transfer), over one connection or several (fetch-pieces.ts).

/**
 * Fetches ctx.url into the working directory. `opened` is a response to a plain GET of it that the
 * caller already has; it is used when there is nothing to resume.
 */
export async function fetchDirect(ctx: SourceContext, opened?: SourceResponse): Promise<FetchedDirectFile> {
  const source = await resumeOrStart(ctx, opened);
  const fetched = source.complete ? { sizeBytes: source.from, sha256: null } : await fetchRest(ctx, source);
  await ctx.transfer.finish(fetched.sizeBytes);
  // A file resumed, or fetched in pieces, holds bytes that did not pass through one hash in order.
  const sha256 = fetched.sha256 ?? (() => sha256OfFile(ctx.transfer.file, ctx.signal));
  const headers = source.response.headers;
  return {
    path: ctx.transfer.file,
    sizeBytes: fetched.sizeBytes,
    sha256,
    declaredType: headers['content-type'] ?? null,
    dispositionName: dispositionName(headers['content-disposition']),
  };
}

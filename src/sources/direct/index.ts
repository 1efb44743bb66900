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
 * caller already has; it is used when there is nothing to resume. `onWhole` hears how far the file
 * is whole from its start while it is fetched from scratch.
 */
export async function fetchDirect(ctx: SourceContext, opened?: SourceResponse, onWhole?: (end: number) => void): Promise<FetchedDirectFile> {
  const source = await resumeOrStart(ctx, opened);
  const fetched = source.complete ? { sizeBytes: source.from, sha256: null } : await fetchRest(ctx, source, onWhole);
  await ctx.transfer.finish(fetched.sizeBytes);
  // A file resumed holds bytes an earlier attempt kept: it is hashed once it is whole.
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

import { sha256OfFile } from '../../storage/hash.ts';
import type { SourceResponse } from '../http.ts';
import type { FetchedDirectFile, SourceContext } from '../types.ts';
import { dispositionName } from './disposition.ts';
import { resumeOrStart } from './resume.ts';
import { streamToDisk } from './stream-to-disk.ts';

// A URL that is itself the media file: taken up where an earlier attempt left it (resume.ts), then
// its body kept (ctx.transfer) while it is hashed (stream-to-disk.ts).

/**
 * Fetches ctx.url into the working directory. `opened` is a response to a plain GET of it that the
 * caller already has; it is used when there is nothing to resume.
 */
export async function fetchDirect(ctx: SourceContext, opened?: SourceResponse): Promise<FetchedDirectFile> {
  const source = await resumeOrStart(ctx, opened);
  const streamed = source.complete ? null : await streamToDisk(ctx, source);
  await ctx.transfer.finish();
  // A file resumed holds bytes that did not pass through this attempt's hash.
  const sha256 = streamed?.sha256 ?? (await sha256OfFile(ctx.transfer.file, ctx.signal));
  const headers = source.response.headers;
  return {
    path: ctx.transfer.file,
    sizeBytes: streamed?.sizeBytes ?? source.from,
    sha256,
    declaredType: headers['content-type'] ?? null,
    dispositionName: dispositionName(headers['content-disposition']),
  };
}

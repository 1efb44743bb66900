import { hashOfFile } from '../../storage/hash.ts';
import type { SourceResponse } from '../http.ts';
import type { FetchedDirectFile, SourceContext } from '../types.ts';
import { dispositionName } from './disposition.ts';
import { partialFile, resumeOrStart } from './resume.ts';
import { streamToDisk } from './stream-to-disk.ts';

// A URL that is itself the media file: taken up where an earlier attempt left it (resume.ts), then
// its body written to disk while it is hashed (stream-to-disk.ts).

/**
 * Fetches ctx.url into the working directory. `opened` is a response to a plain GET of it that the
 * caller already has; it is used when there is nothing to resume.
 */
export async function fetchDirect(ctx: SourceContext, opened?: SourceResponse): Promise<FetchedDirectFile> {
  const file = partialFile(ctx);
  const source = await resumeOrStart(ctx, opened);
  const written = source.complete ? { sizeBytes: source.from, sha256: (await hashOfFile(file)).digest('hex') } : await streamToDisk(ctx, file, source);
  const headers = source.response.headers;
  return { path: file, ...written, declaredType: headers['content-type'] ?? null, dispositionName: dispositionName(headers['content-disposition']) };
}

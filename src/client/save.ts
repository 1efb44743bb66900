import { isNetworkError, ProblemError } from './problem.ts';
import type { Download } from './types.ts';

export type SavedFile = { path: string; size_bytes: number; sha256: string };
export type SaveProgress = { received_bytes: number; total_bytes: number };
export type FetchFn = (input: Request) => Promise<Response>;

/** Cut connections in a row, each bringing no byte, before save gives up. */
const MAX_RETRIES = 5;
const RETRY_DELAY_MS = 1_000;
const NO_BYTES = { type: 'about:blank', title: 'No bytes', status: 502, detail: 'The file link kept answering without sending the rest of the file.' };

/**
 * Writes a completed download's file to `path`: into `path.part` first, resuming it with `Range`
 * (and `If-Range` on the ETag, so that a changed file starts over) after a cut connection or on a
 * later call, then checks its sha256 against the download's and renames it into place, so that
 * `path` is only ever the whole, verified file. A file that does not match its sha256 is deleted
 * and throws.
 *
 * A link that answers 404 or 410, first or on a resume, throws that problem and deletes the part:
 * the service says so only when the file is gone for good (expired, or removed from storage), and
 * a download never gets its file back, so no later call could finish it. Any other refusal (a
 * 5xx, a proxy's error page) throws and keeps the part for the next call to resume.
 *
 * The file system and the hash come from `node:` modules, imported here rather than at the top,
 * so that a browser bundle (node:* marked external) can use the rest of the SDK.
 */
export async function saveFile(
  fetchFn: FetchFn,
  download: Download,
  path: string,
  options: { signal?: AbortSignal; onProgress?: (progress: SaveProgress) => void } = {},
): Promise<SavedFile> {
  const { signal, onProgress } = options;
  const file = download.file;
  if (download.status !== 'completed' || !file || !download.download_url) throw ProblemError.ended(download);
  const fs = await import('node:fs/promises');
  // Refused before any byte is fetched: a folder (or no name at all) could only fail at the end.
  const isFolder = await fs.stat(path).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!path || /[\\/]$/.test(path) || isFolder) {
    throw new ProblemError(400, { type: 'about:blank', title: 'Bad path', status: 400, detail: `"${path}" names a folder, not a file to save to.` });
  }
  const part = `${path}.part`;
  const etag = `"${file.sha256}"`;

  for (let failures = 0; ;) {
    const offset = await fs.stat(part).then(
      (stats) => stats.size,
      () => 0,
    );
    if (offset === file.size_bytes) break;
    const headers: Record<string, string> = offset > 0 && offset < file.size_bytes ? { Range: `bytes=${offset}-`, 'If-Range': etag } : {};
    let received = offset;
    try {
      const response = await fetchFn(new Request(download.download_url, { headers, signal }));
      if (response.status !== 200 && response.status !== 206) {
        if (response.status === 404 || response.status === 410) await fs.rm(part, { force: true });
        throw await ProblemError.fromResponse(response);
      }
      if (!response.body) throw new TypeError('The file answer had no body.');
      // 200: the whole file again (no range support, or it changed), so the part starts over.
      if (response.status === 200) received = 0;
      const handle = await fs.open(part, received === 0 ? 'w' : 'a');
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      try {
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          await handle.write(read.value);
          received += read.value.byteLength;
          if (received > offset) failures = 0;
          onProgress?.({ received_bytes: received, total_bytes: file.size_bytes });
        }
      } finally {
        reader.releaseLock();
        await handle.close();
      }
      if (received > file.size_bytes) await fs.truncate(part, 0);
      if (received === offset && ++failures > MAX_RETRIES) throw new ProblemError(502, NO_BYTES);
    } catch (error) {
      if (signal?.aborted || !isNetworkError(error)) throw error;
      if (++failures > MAX_RETRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    }
  }

  const sha256 = await sha256Of(part);
  if (sha256 !== file.sha256) {
    await fs.rm(part, { force: true });
    throw new ProblemError(502, {
      type: 'about:blank',
      title: 'Checksum mismatch',
      status: 502,
      detail: `The saved file's sha256 is ${sha256}, not the download's ${file.sha256}; it was deleted.`,
    });
  }
  await fs.rename(part, path);
  return { path, size_bytes: file.size_bytes, sha256 };
}

async function sha256Of(path: string): Promise<string> {
  const [{ createHash }, { createReadStream }] = await Promise.all([import('node:crypto'), import('node:fs')]);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

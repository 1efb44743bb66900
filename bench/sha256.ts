import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { CompletedDownload } from './api.ts';

// The bench checks every file whose download it measures: the sha256 the service reports, and the
// sha256 of the bytes its link serves (from the service's store, whichever it is), must both be
// the source file's. The check runs after the download is timed, and never inside a timed run.

async function sha256Of(chunks: AsyncIterable<Buffer>): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of chunks) hash.update(chunk);
  return hash.digest('hex');
}

export const sha256OfFile = (file: string): Promise<string> => sha256Of(createReadStream(file));

/** Fails unless the service reports `expected` as the file's sha256 and serves bytes of that sha256. */
export async function checkServedFile(download: CompletedDownload, expected: string): Promise<void> {
  const fail = (what: string) => new Error(`download ${download.id}: ${what}, where the source file's sha256 is ${expected}`);
  if (download.file?.sha256 !== expected) throw fail(`the service reports sha256 ${download.file?.sha256}`);
  const response = await fetch(download.download_url);
  if (!response.ok || !response.body) throw fail(`GET ${download.download_url} answered ${response.status}`);
  const served = await sha256Of(Readable.fromWeb(response.body));
  if (served !== expected) throw fail(`the bytes served under its link have sha256 ${served}`);
}

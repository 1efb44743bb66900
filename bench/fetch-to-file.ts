import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { timedRun } from './processes.ts';

/**
 * Milliseconds to fetch `url` into `file`, following redirects: with curl when it is installed,
 * else with Node's fetch. The client the references are measured with.
 */
export async function fetchToFile(curl: string | null, url: string, file: string): Promise<number> {
  if (curl) return timedRun(curl, ['--silent', '--show-error', '--fail', '--location', '--output', file, url]);
  const started = performance.now();
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`GET ${url} answered ${response.status}`);
  await pipeline(Readable.fromWeb(response.body), createWriteStream(file));
  return performance.now() - started;
}

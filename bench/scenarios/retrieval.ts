import path from 'node:path';
import type { CompletedDownload } from '../api.ts';
import type { Bench } from '../context.ts';
import { fetchToFile } from '../fetch-to-file.ts';
import { runLoad, type LoadResult } from '../load.ts';
import { startNginx, startOffloadNginx } from '../nginx.ts';
import type { Server } from '../processes.ts';
import { startStaticServer } from '../servers.ts';
import { megabytes, megabytesPerSecond, median, perSecond, ratioAtLeast, row, type Row, type Target } from '../table.ts';
import { eachLatest, takeTurns } from '../turns.ts';

// Scenario 3: GET /download/{token} of a completed file under load, against nginx (or, without
// it, a plain Node server with `send`) serving the very same file from the service's storage;
// with nginx, also the service behind it with FILE_OFFLOAD=nginx (the service checks the token,
// nginx sends the bytes); and the same file served by services with other settings (STORAGE=s3),
// each in the same turns against the same reference.

const ROUNDS = 5;
const SECONDS = 2;
const RANGE = 'bytes=0-1048575';

/** The same bytes served by the service with other settings, named by them (`STORAGE=s3`). */
export type RetrievalVariant = {
  name: string;
  /** The file's link there. */
  url: string;
  target: Target;
  /**
   * It answers with a redirect (S3_RETRIEVAL=redirect), which the load generator does not follow:
   * measured instead by a client that does (curl -L), whole file on one connection, against the
   * reference fetched by the same client.
   */
  redirects?: boolean;
};

type Run = { figure: string; connections: number; headers?: Record<string, string>; measure: 'bytes' | 'requests' };

export async function benchRetrieval(
  bench: Bench,
  dataDir: string,
  download: CompletedDownload,
  startOffloadService: () => Promise<Server>,
  others: RetrievalVariant[] = [],
): Promise<Row[]> {
  const filesDir = path.join(dataDir, 'files');
  const reference = await bench.keep(
    bench.tools.nginx
      ? startNginx(bench.tools.nginx, filesDir, path.join(bench.runDir, 'nginx'))
      : startStaticServer(filesDir, 0, path.join(bench.runDir, 'send.log')),
  );
  const label = bench.tools.nginx ? 'nginx' : 'Node + send';
  const theirs = `${reference.url}/${download.id}`;
  const tokenPath = new URL(download.download_url).pathname;
  const variants: RetrievalVariant[] = [...others];
  if (bench.tools.nginx) {
    const offloaded = await bench.keep(
      startOffloadNginx(bench.tools.nginx, (await startOffloadService()).url, filesDir, path.join(bench.runDir, 'nginx-offload')),
    );
    variants.unshift({ name: 'FILE_OFFLOAD=nginx', url: `${offloaded.url}${tokenPath}`, target: ratioAtLeast(0.8) });
  } else {
    bench.progress('nginx is absent: retrieval is compared with Node + send, and FILE_OFFLOAD=nginx has no figure (apt-get install nginx)');
  }
  const loaded = variants.filter((variant) => !variant.redirects);
  const bytes = download.file?.size_bytes ?? 0;
  const size = megabytes(bytes);

  const runs: Run[] = [
    { figure: `Retrieval of ${size}, 1 connection: throughput`, connections: 1, measure: 'bytes' },
    { figure: `Retrieval of ${size}, 32 connections: throughput`, connections: 32, measure: 'bytes' },
    { figure: `Retrieval, Range ${RANGE}, 32 connections: requests`, connections: 32, headers: { range: RANGE }, measure: 'requests' },
  ];
  const rows: Row[] = [];
  for (const run of runs) {
    bench.progress(run.figure);
    const pick = (result: LoadResult) => (run.measure === 'bytes' ? result.bytesPerSecond : result.requestsPerSecond);
    const format = run.measure === 'bytes' ? megabytesPerSecond : perSecond;
    const load = (url: string) => () => runLoad({ url, connections: run.connections, durationSeconds: SECONDS, headers: run.headers }).then(pick);
    const contenders: Record<string, () => Promise<number>> = { service: load(download.download_url), [label]: load(theirs) };
    for (const variant of loaded) contenders[variant.name] = load(variant.url);
    const results = await takeTurns(bench, ROUNDS, contenders, eachLatest(format));
    const reference = { label, value: median(results[label]!) };
    rows.push(row(run.figure, median(results.service!), reference, 'higher', format, ratioAtLeast(0.5)));
    for (const variant of loaded) rows.push(row(`${run.figure}, ${variant.name}`, median(results[variant.name]!), reference, 'higher', format, variant.target));
  }
  const followed = variants.filter((variant) => variant.redirects);
  if (followed.length) rows.push(...(await followingRedirects(bench, bytes, { label, url: theirs }, followed)));
  return rows;
}

/** Whole-file retrieval by a client that follows redirects, one file at a time, against the reference fetched by the same client. */
async function followingRedirects(bench: Bench, bytes: number, reference: { label: string; url: string }, variants: RetrievalVariant[]): Promise<Row[]> {
  const client = bench.tools.curl ? 'curl -L' : 'Node fetch';
  const figure = `Retrieval of ${megabytes(bytes)}, 1 connection, ${client}: throughput`;
  bench.progress(figure);
  const fetched = (url: string) => async () => (bytes * 1000) / (await fetchToFile(bench.tools.curl, url, '/dev/null'));
  const contenders: Record<string, () => Promise<number>> = { [reference.label]: fetched(reference.url) };
  for (const variant of variants) contenders[variant.name] = fetched(variant.url);
  const results = await takeTurns(bench, ROUNDS, contenders, eachLatest(megabytesPerSecond));
  const theirs = { label: `${reference.label}, ${client}`, value: median(results[reference.label]!) };
  return variants.map((variant) => row(`${figure}, ${variant.name}`, median(results[variant.name]!), theirs, 'higher', megabytesPerSecond, variant.target));
}

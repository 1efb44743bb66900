import path from 'node:path';
import type { CompletedDownload } from '../api.ts';
import type { Bench } from '../context.ts';
import { runLoad, type LoadResult } from '../load.ts';
import { startNginx, startOffloadNginx } from '../nginx.ts';
import type { Server } from '../processes.ts';
import { startStaticServer } from '../servers.ts';
import { megabytes, megabytesPerSecond, median, perSecond, ratioAtLeast, row, type Row } from '../table.ts';
import { takeTurns } from '../turns.ts';

// Scenario 3: GET /download/{token} of a completed file under load, against nginx (or, without
// it, a plain Node server with `send`) serving the very same file from the service's storage;
// with nginx, also the service behind it with FILE_OFFLOAD=nginx (the service checks the token,
// nginx sends the bytes).

const ROUNDS = 5;
const SECONDS = 2;
const RANGE = 'bytes=0-1048575';

type Run = { figure: string; connections: number; headers?: Record<string, string>; measure: 'bytes' | 'requests' };

export async function benchRetrieval(bench: Bench, dataDir: string, download: CompletedDownload, startOffloadService: () => Promise<Server>): Promise<Row[]> {
  const filesDir = path.join(dataDir, 'files');
  const reference = await bench.keep(
    bench.tools.nginx
      ? startNginx(bench.tools.nginx, filesDir, path.join(bench.runDir, 'nginx'))
      : startStaticServer(filesDir, 0, path.join(bench.runDir, 'send.log')),
  );
  const label = bench.tools.nginx ? 'nginx' : 'Node + send';
  const theirs = `${reference.url}/${download.id}`;
  const tokenPath = new URL(download.download_url).pathname;
  const offloaded = bench.tools.nginx
    ? `${(await bench.keep(startOffloadNginx(bench.tools.nginx, (await startOffloadService()).url, filesDir, path.join(bench.runDir, 'nginx-offload')))).url}${tokenPath}`
    : null;
  if (!offloaded) bench.progress('nginx is absent: retrieval is compared with Node + send, and FILE_OFFLOAD=nginx has no figure (apt-get install nginx)');
  const size = megabytes(download.file?.size_bytes ?? 0);

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
    const contenders: Record<string, () => Promise<number>> = { ours: load(download.download_url), theirs: load(theirs) };
    if (offloaded) contenders.offloaded = load(offloaded);
    const results = await takeTurns(
      bench,
      ROUNDS,
      contenders,
      (latest) => `service ${format(latest.ours!)}, ${label} ${format(latest.theirs!)}${offloaded ? `, behind nginx ${format(latest.offloaded!)}` : ''}`,
    );
    const reference = { label, value: median(results.theirs!) };
    rows.push(row(run.figure, median(results.ours!), reference, 'higher', format, ratioAtLeast(0.5)));
    if (offloaded) rows.push(row(`${run.figure}, FILE_OFFLOAD=nginx`, median(results.offloaded!), reference, 'higher', format, ratioAtLeast(0.8)));
  }
  return rows;
}

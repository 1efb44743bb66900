import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/config/paths.ts';
import { resolveFfmpegPath } from '../src/media/ffmpeg.ts';
import type { Bench } from './context.ts';
import { startDatabaseServer, type DatabaseServer } from './database.ts';
import { prepareMedia } from './media.ts';
import { startFileNginx } from './nginx.ts';
import { freshPageCache } from './page-cache.ts';
import { onPath, timedRun, type Server } from './processes.ts';
import { benchCreate } from './scenarios/create.ts';
import { benchDirect } from './scenarios/direct.ts';
import { benchHls } from './scenarios/hls.ts';
import { benchPickup } from './scenarios/pickup.ts';
import { benchRateLimited } from './scenarios/rate-limited.ts';
import { benchRetrieval } from './scenarios/retrieval.ts';
import { s3Note, s3rverVersion, startS3rver } from './s3.ts';
import { startInsertApi, startServiceProcess, startStaticServer } from './servers.ts';
import { loadAverage, renderReport } from './report.ts';
import type { Row } from './table.ts';

// `npm run bench`: every figure of the service against a reference measured on this machine in
// this run, as a markdown table on stdout and in bench/results.md. BENCH_DATABASE_URL runs the
// databases on another PostgreSQL; BENCH_CPU_PROF=<dir> has the service write CPU profiles there.
// The direct download and retrieval also run against the service with STORAGE=s3 on s3rver, in the
// same turns, so that the table shows what the storage seam costs.

const HLS_LATENCY_MS = 20;
/** BENCH_ONLY=hls,create (names: direct, rate-limited, hls, retrieval, pickup, create) runs only those figures; retrieval brings direct, whose file it serves. */
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((name) => name.trim())) : undefined;
const runs = (name: string) => !only || only.has(name) || (name === 'direct' && only.has('retrieval'));
/** The rows of the service that keeps its files in an S3 bucket are named by this. */
const S3 = 'STORAGE=s3';

const began = performance.now();
const loadBefore = loadAverage();
const progress = (message: string) => console.log(`[bench ${((performance.now() - began) / 1000).toFixed(0).padStart(3)} s] ${message}`);

const runDir = await mkdtemp(path.join(os.tmpdir(), 'vds-bench-run-'));
// The embedded PostgreSQL and nginx's workers run as other users and must reach their files.
await chmod(runDir, 0o755);
const servers: Server[] = [];
let database: DatabaseServer | undefined;
let finished = false;
try {
  progress('building the service (npm run build), which the bench runs as `npm start` does');
  await timedRun('npm', ['run', '-s', 'build']);
  const ffmpeg = await resolveFfmpegPath(process.env.FFMPEG_PATH);
  const media = await prepareMedia(ffmpeg);
  const [curl, nginx, ytDlp, aria2c, sync] = [onPath('curl'), onPath('nginx'), onPath('yt-dlp'), onPath('aria2c'), onPath('sync')];
  const bench: Bench = {
    runDir,
    progress,
    ffmpeg,
    media,
    tools: { curl, nginx, ytDlp, aria2c },
    settle: async () => {
      if (sync) await timedRun(sync, []);
    },
    keep: async <S extends Server>(starting: Promise<S>) => {
      const server = await starting;
      servers.push(server);
      return server;
    },
  };
  progress(`ffmpeg ${ffmpeg}; curl ${curl ?? 'absent'}; nginx ${nginx ?? 'absent'}; yt-dlp ${ytDlp ?? 'absent'}; aria2c ${aria2c ?? 'absent'}`);
  const emptied = await freshPageCache(sync, media.dir);
  progress(emptied ? 'page cache emptied, and the media read back into it' : 'page cache left as it was (emptying it needs root); the media read into it');
  database = await startDatabaseServer(runDir);
  progress(`databases on ${database.label}`);

  const log = (name: string) => path.join(runDir, `${name}.log`);
  const cpuProfileDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
  const origin = await bench.keep(startStaticServer(media.dir, 0, log('origin')));
  // The direct download's source: nginx, as a real server of files (sendfile, little CPU of the two cores), else the Node one.
  const fileOrigin = nginx ? await bench.keep(startFileNginx(nginx, media.dir, path.join(runDir, 'nginx-origin'))) : origin;
  const slowOrigin = await bench.keep(startStaticServer(media.dir, HLS_LATENCY_MS, log('slow-origin')));
  const allDataDir = path.join(runDir, 'service-all');
  const allDatabase = await database.create();
  const service = await bench.keep(
    startServiceProcess({ databaseUrl: allDatabase, dataDir: allDataDir, role: 'all', ffmpeg, log: log('service-all'), cpuProfileDir }),
  );
  progress(`service (ROLE=all) at ${service.url}, pid ${service.pid}`);
  // The storage seam: the same service with its files in a bucket of s3rver, its own database and data folder.
  const s3 = await bench.keep(startS3rver(path.join(runDir, 's3rver')));
  const s3Database = await database.create();
  const s3DataDir = path.join(runDir, 'service-s3');
  const s3Service = await bench.keep(
    startServiceProcess({ databaseUrl: s3Database, dataDir: s3DataDir, role: 'all', ffmpeg, log: log('service-s3'), cpuProfileDir, env: s3.env('stream') }),
  );
  progress(`service (ROLE=all, ${S3}) at ${s3Service.url}, pid ${s3Service.pid}; s3rver ${s3rverVersion()} at ${s3.url}, pid ${s3.pid}`);

  const rows: Row[] = [];
  const notes: string[] = [];
  if (runs('direct')) {
    progress('direct download');
    const direct = await benchDirect(bench, service, fileOrigin, [{ name: S3, service: s3Service }]);
    rows.push(...direct.rows);
    if (runs('retrieval')) rows.push(...(await retrieval(direct)));
  }
  if (runs('rate-limited')) {
    progress('direct download from a server that limits the rate of each connection');
    const rateLimited = await benchRateLimited(bench, service);
    rows.push(...rateLimited.rows);
    notes.push(...rateLimited.notes);
  }
  if (runs('hls')) {
    progress('HLS');
    rows.push(...(await benchHls(bench, service, slowOrigin, HLS_LATENCY_MS)));
  }
  for (const server of [s3Service, s3]) await server.stop();
  const pickup = runs('pickup') ? (progress('pickup latency'), await benchPickup(bench, service, origin, allDatabase)) : [];
  await service.stop();

  if (runs('create')) {
    progress('POST /downloads');
    const apiDatabase = await database.create();
    const apiService = await bench.keep(
      startServiceProcess({ databaseUrl: apiDatabase, dataDir: path.join(runDir, 'service-api'), role: 'api', ffmpeg, log: log('service-api'), cpuProfileDir }),
    );
    const insertApi = await bench.keep(startInsertApi(apiDatabase, log('insert-api')));
    rows.push(...(await benchCreate(bench, apiService, insertApi)));
  }
  rows.push(...pickup);

  const seconds = Math.round((performance.now() - began) / 1000);
  const report = renderReport(rows, { database: database.label, seconds, loadBefore, loadAfter: loadAverage() }, [s3Note(S3), ...notes]);
  await writeFile(path.join(projectRoot, 'bench/results.md'), report);
  console.log(`\n${report}`);
  const missed = rows.filter((r) => r.met === false).length;
  progress(missed ? `${missed} target(s) missed; written to bench/results.md` : 'every target met; written to bench/results.md');
  finished = true;

  async function retrieval(direct: Awaited<ReturnType<typeof benchDirect>>): Promise<Row[]> {
    progress('retrieval');
    // The same files and database, served by an API process that leaves the bytes to nginx.
    const offloadService = () =>
      bench.keep(
        startServiceProcess({
          databaseUrl: allDatabase,
          dataDir: allDataDir,
          role: 'api',
          ffmpeg,
          log: log('service-offload'),
          cpuProfileDir,
          env: { FILE_OFFLOAD: 'nginx' },
        }),
      );
    // The S3 service's file: streamed from the bucket by the service, or sent there with a 302 by an API process of the same settings.
    const s3Download = direct.variants[S3]!;
    const redirectService = await bench.keep(
      startServiceProcess({ databaseUrl: s3Database, dataDir: s3DataDir, role: 'api', ffmpeg, log: log('service-s3-redirect'), env: s3.env('redirect') }),
    );
    const rows = await benchRetrieval(bench, allDataDir, direct.download, offloadService, [
      { name: S3, url: s3Download.download_url, target: null },
      { name: `${S3} S3_RETRIEVAL=redirect`, url: `${redirectService.url}${new URL(s3Download.download_url).pathname}`, target: null, redirects: true },
    ]);
    await redirectService.stop();
    return rows;
  }
} finally {
  for (const server of servers.reverse()) await server.stop();
  await database?.stop();
  if (finished) await rm(runDir, { recursive: true, force: true });
  else console.error(`[bench] failed; logs of the servers are kept in ${runDir}`);
}

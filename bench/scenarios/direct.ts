import { createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createdToCompletedMs, downloadThroughService, type CompletedDownload } from '../api.ts';
import type { Bench } from '../context.ts';
import { timedRun, type Server } from '../processes.ts';
import { residentBytes, watchPeakRss } from '../rss.ts';
import { megabytes, megabytesPerSecond, median, oursBelow, ratioAtLeast, row, type Row } from '../table.ts';
import { takeTurns } from '../turns.ts';

// Scenario 1: one large MP4 from a local server, through the service (create to completed) and
// through curl, both writing to the same disk; and the service's memory while it downloads, which
// must not grow with the file's size or, beyond a few MB each, with downloads running together.

const ROUNDS = 5;
const RSS_LIMIT = 200e6;
const CONCURRENT = 4;
/** What a download may add to the peak of one 300 MB download: a few MB each. */
const PER_DOWNLOAD_ALLOWANCE = 5e6;

export async function benchDirect(bench: Bench, service: Server, origin: Server): Promise<{ rows: Row[]; download: CompletedDownload }> {
  const url = `${origin.url}/${bench.media.big}`;
  const size = (await stat(path.join(bench.media.dir, bench.media.big))).size;
  const output = path.join(bench.runDir, 'direct.mp4');
  const reference = bench.tools.curl ? 'curl' : 'Node fetch';
  const idle = await residentBytes(service.pid);
  const peaks: number[] = [];
  let download: CompletedDownload | undefined;
  const speeds = await takeTurns(
    bench,
    ROUNDS,
    {
      ours: async () => {
        const watch = await watchPeakRss(service.pid);
        download = await downloadThroughService(service.url, url);
        peaks.push(await watch.stop());
        return (size * 1000) / createdToCompletedMs(download);
      },
      theirs: async () => {
        const ms = await fetchToFile(bench.tools.curl, url, output);
        await rm(output, { force: true });
        return (size * 1000) / ms;
      },
    },
    (latest) => `service ${megabytesPerSecond(latest.ours)} (peak RSS ${megabytes(peaks.at(-1)!)}), ${reference} ${megabytesPerSecond(latest.theirs)}`,
  );
  const figure = `Direct download of ${megabytes(size)}`;
  const rows = [
    row(`${figure}: throughput`, median(speeds.ours), { label: reference, value: median(speeds.theirs) }, 'higher', megabytesPerSecond, ratioAtLeast(0.8)),
    row(
      `${figure}: service peak RSS`,
      Math.max(...peaks),
      { label: 'idle service', value: idle },
      'lower',
      megabytes,
      oursBelow(RSS_LIMIT, `ours < ${megabytes(RSS_LIMIT)}`),
    ),
    ...(await flatMemory(bench, service, origin, Math.max(...peaks))),
  ];
  return { rows, download: download! };
}

/** Milliseconds to fetch `url` into `file`: with curl when it is installed, else with Node's fetch. */
async function fetchToFile(curl: string | null, url: string, file: string): Promise<number> {
  if (curl) return timedRun(curl, ['--silent', '--show-error', '--fail', '--output', file, url]);
  const started = performance.now();
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`GET ${url} answered ${response.status}`);
  await pipeline(Readable.fromWeb(response.body), createWriteStream(file));
  return performance.now() - started;
}

/** The service's peak for a small and a huge file and for downloads run together, against its peak for one 300 MB file. */
async function flatMemory(bench: Bench, service: Server, origin: Server, onePeak: number): Promise<Row[]> {
  const peakOf = async (files: string[]) => {
    await bench.settle();
    const watch = await watchPeakRss(service.pid);
    await Promise.all(files.map((file) => downloadThroughService(service.url, `${origin.url}/${file}`)));
    return watch.stop();
  };
  const reference = { label: 'one 300 MB download', value: onePeak };
  const cases: [string, string[]][] = [
    [`a ${megabytes((await stat(path.join(bench.media.dir, bench.media.small))).size)} file`, [bench.media.small]],
    [`a ${megabytes((await stat(path.join(bench.media.dir, bench.media.huge))).size)} file`, [bench.media.huge]],
    [`${CONCURRENT} at once`, Array.from({ length: CONCURRENT }, () => bench.media.big)],
  ];
  const rows: Row[] = [];
  for (const [what, files] of cases) {
    bench.progress(`memory: ${what}`);
    const peak = await peakOf(files);
    const limit = onePeak + PER_DOWNLOAD_ALLOWANCE * files.length;
    rows.push(row(`Service peak RSS, ${what}`, peak, reference, 'lower', megabytes, oursBelow(limit, `ours < ${megabytes(limit)}`)));
  }
  return rows;
}

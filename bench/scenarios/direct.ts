import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { createdToCompletedMs, downloadThroughService, type CompletedDownload } from '../api.ts';
import type { Bench } from '../context.ts';
import { fetchToFile } from '../fetch-to-file.ts';
import type { Server } from '../processes.ts';
import { residentBytes, watchPeakRss } from '../rss.ts';
import { checkServedFile, sha256OfFile } from '../sha256.ts';
import { growthRow, megabytes, megabytesPerSecond, megabytesTenths, median, oursAtMost, ratioAtLeast, row, type Row } from '../table.ts';
import { takeTurns } from '../turns.ts';

// Scenario 1: one large MP4 from a local server, through the service (create to completed) and
// through curl, both writing to the same disk; and how much the service's memory grows over the
// idle service while it downloads, which must stay small and not grow with the file's size or with
// downloads running together. Services with other settings (STORAGE=s3) take their turns beside
// it, against the same curl.

const ROUNDS = 5;
/** How much one 300 MB download may add to the idle service's resident memory. */
const GROWTH_LIMIT = 24e6;
const CONCURRENT = 4;
/** What a small or huge file, or downloads run together, may add to the growth of one 300 MB download. */
const FLAT_ALLOWANCE = 8e6;

/** The service with other settings, named by them (`STORAGE=s3`). */
export type DirectVariant = { name: string; service: Server };

type Contender = DirectVariant & { idle: number; peaks: number[]; download?: CompletedDownload };

export type DirectResult = {
  rows: Row[];
  /** The last file the service downloaded, for the retrieval figures. */
  download: CompletedDownload;
  /** The same for each variant, by its name. */
  variants: Record<string, CompletedDownload>;
};

export async function benchDirect(bench: Bench, service: Server, origin: Server, variants: DirectVariant[] = []): Promise<DirectResult> {
  const source = path.join(bench.media.dir, bench.media.big);
  const url = `${origin.url}/${bench.media.big}`;
  const size = (await stat(source)).size;
  const sha256 = await sha256OfFile(source);
  const output = path.join(bench.runDir, 'direct.mp4');
  const reference = bench.tools.curl ? 'curl' : 'Node fetch';
  const contenders: Contender[] = [];
  for (const variant of [{ name: 'service', service }, ...variants]) contenders.push({ ...variant, idle: await residentBytes(variant.service.pid), peaks: [] });
  const through = (contender: Contender) => async () => {
    const watch = await watchPeakRss(contender.service.pid);
    const download = await downloadThroughService(contender.service.url, url);
    contender.peaks.push(await watch.stop());
    // Untimed: the figure is the service's own created_at to completed_at.
    await checkServedFile(download, sha256);
    contender.download = download;
    return (size * 1000) / createdToCompletedMs(download);
  };
  const speeds = await takeTurns(
    bench,
    ROUNDS,
    {
      ...Object.fromEntries(contenders.map((contender) => [contender.name, through(contender)])),
      [reference]: async () => {
        const ms = await fetchToFile(bench.tools.curl, url, output);
        await rm(output, { force: true });
        return (size * 1000) / ms;
      },
    },
    (latest) =>
      [
        ...contenders.map(
          ({ name, peaks, idle }) => `${name} ${megabytesPerSecond(latest[name]!)} (memory ${megabytesTenths(peaks.at(-1)! - idle)} over idle)`,
        ),
        `${reference} ${megabytesPerSecond(latest[reference]!)}`,
      ].join(', '),
  );
  const figure = `Direct download of ${megabytes(size)}`;
  const theirs = { label: reference, value: median(speeds[reference]!) };
  const [ours, ...others] = contenders;
  const named = (text: string, contender: Contender) => (contender === ours ? text : `${text}, ${contender.name}`);
  const throughput = (contender: Contender) =>
    row(
      named(`${figure}: throughput`, contender),
      median(speeds[contender.name]!),
      theirs,
      'higher',
      megabytesPerSecond,
      // The variants' figure is what their settings cost; no target is set for them.
      contender === ours ? ratioAtLeast(0.8) : null,
    );
  // The peak (VmHWM, reset before each download) over the idle service measured before the first.
  const growth = (contender: Contender) => Math.max(...contender.peaks) - contender.idle;
  const memory = (contender: Contender) =>
    growthRow(
      named(`${figure}: service memory growth (peak RSS over idle)`, contender),
      growth(contender),
      { label: 'idle service', value: contender.idle },
      megabytesTenths,
      // The variants' growth is what their settings cost; no target is set for them.
      contender === ours ? oursAtMost(GROWTH_LIMIT, `≤ ${megabytesTenths(GROWTH_LIMIT)}`) : null,
    );
  const rows = [...contenders.map(throughput), ...contenders.map(memory), ...(await flatMemory(bench, service, origin, ours!.idle, growth(ours!)))];
  return { rows, download: ours!.download!, variants: Object.fromEntries(others.map(({ name, download }) => [name, download!])) };
}

/** The service's growth over `idle` for a small and a huge file and for downloads run together, against its growth for one 300 MB file. */
async function flatMemory(bench: Bench, service: Server, origin: Server, idle: number, oneGrowth: number): Promise<Row[]> {
  const peakOf = async (files: string[]) => {
    await bench.settle();
    const watch = await watchPeakRss(service.pid);
    await Promise.all(files.map((file) => downloadThroughService(service.url, `${origin.url}/${file}`)));
    return watch.stop();
  };
  const cases: [string, string[]][] = [
    [`a ${megabytes((await stat(path.join(bench.media.dir, bench.media.small))).size)} file`, [bench.media.small]],
    [`a ${megabytes((await stat(path.join(bench.media.dir, bench.media.huge))).size)} file`, [bench.media.huge]],
    [`${CONCURRENT} at once`, Array.from({ length: CONCURRENT }, () => bench.media.big)],
  ];
  const limit = oneGrowth + FLAT_ALLOWANCE;
  const target = oursAtMost(limit, `≤ ${megabytesTenths(limit)} (one download's + ${megabytes(FLAT_ALLOWANCE)})`);
  const rows: Row[] = [];
  for (const [what, files] of cases) {
    bench.progress(`memory: ${what}`);
    const peak = await peakOf(files);
    rows.push(growthRow(`Service memory growth (peak RSS over idle), ${what}`, peak - idle, { label: 'idle service', value: idle }, megabytesTenths, target));
  }
  return rows;
}

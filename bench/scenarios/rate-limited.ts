import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { createdToCompletedMs, downloadThroughService } from '../api.ts';
import type { Bench } from '../context.ts';
import type { BenchMedia } from '../media.ts';
import { fetchToFile } from '../fetch-to-file.ts';
import { startRateLimitedNginx } from '../nginx.ts';
import { timedRun, type Server } from '../processes.ts';
import { checkServedFile, sha256OfFile } from '../sha256.ts';
import { megabytes, megabytesPerSecond, median, ratioAtLeast, row, type Row } from '../table.ts';
import { eachLatest, takeTurns } from '../turns.ts';

// Scenario 1b: direct files from nginx sending at most 8 MiB/s per connection, as hosts that
// throttle each connection do: one connection takes the same time however fast the link, and a
// client that fetches ranges over several connections at once goes that many times faster.
// Through the service, by curl (one connection) and by aria2c (8 connections), taking turns, for a
// 126 MB file and for a 32 MB one, where the start and the end of the connections weigh more.

const ROUNDS = 3;
/** nginx's `limit_rate`: 8 MiB/s per connection. */
const RATE = '8m';
const SERVICE = 'service';
const ARIA2C = 'aria2c -x 8 -s 8';
/** Each file with its targets: how many times curl's one connection, and what share of aria2c's eight. */
const FILES: { file: (media: BenchMedia) => string; curl: number; aria2c: number }[] = [
  { file: (media) => media.medium, curl: 4, aria2c: 1 },
  { file: (media) => media.short, curl: 5, aria2c: 0.9 },
];

/** The rows, and what the bench left out for want of a tool. */
export type RateLimitedResult = { rows: Row[]; notes: string[] };

export async function benchRateLimited(bench: Bench, service: Server): Promise<RateLimitedResult> {
  const { nginx, aria2c } = bench.tools;
  const figure = (size: number) => `Direct download of ${megabytes(size)}, limit_rate ${RATE} per connection: throughput`;
  const what = `Direct download, limit_rate ${RATE} per connection`;
  const notes: string[] = [];
  const leaveOut = (note: string) => {
    bench.progress(note);
    notes.push(note);
  };
  if (!nginx) {
    leaveOut(`${what}: no figure, for nginx, which limits the rate, is absent (apt-get install nginx)`);
    return { rows: [], notes };
  }
  if (!aria2c) leaveOut(`${what}: no comparison with aria2c, which is absent (apt-get install aria2)`);

  const server = await bench.keep(startRateLimitedNginx(nginx, bench.media.dir, path.join(bench.runDir, 'nginx-rate-limited'), RATE));
  const outputDir = path.join(bench.runDir, 'rate-limited');
  await mkdir(outputDir, { recursive: true });
  const rows: Row[] = [];
  for (const { file, curl, aria2c: aria2cShare } of FILES) {
    const name = file(bench.media);
    const source = path.join(bench.media.dir, name);
    const size = (await stat(source)).size;
    bench.progress(`  ${megabytes(size)}`);
    const fetchers = await contenders(bench, service, { source, size, url: `${server.url}/${name}` }, outputDir);
    const speeds = await takeTurns(bench, ROUNDS, fetchers, eachLatest(megabytesPerSecond));
    const ours = median(speeds[SERVICE]!);
    const against = (name: string, min: number) =>
      row(figure(size), ours, { label: name, value: median(speeds[name]!) }, 'higher', megabytesPerSecond, ratioAtLeast(min));
    rows.push(against(bench.tools.curl ? 'curl' : 'Node fetch', curl), ...(aria2c ? [against(ARIA2C, aria2cShare)] : []));
  }
  await server.stop();
  return { rows, notes };
}

type Served = { source: string; size: number; url: string };

/** The service, one connection (curl, else Node's fetch) and aria2c where present, each fetching the file at `url` once. */
async function contenders(bench: Bench, service: Server, { source, size, url }: Served, outputDir: string): Promise<Record<string, () => Promise<number>>> {
  const { curl, aria2c } = bench.tools;
  const sha256 = await sha256OfFile(source);
  const rate = (ms: number) => (size * 1000) / ms;
  const contenders: Record<string, () => Promise<number>> = {
    [SERVICE]: async () => {
      const download = await downloadThroughService(service.url, url);
      // Untimed: the figure is the service's own created_at to completed_at.
      await checkServedFile(download, sha256);
      return rate(createdToCompletedMs(download));
    },
    [curl ? 'curl' : 'Node fetch']: async () => {
      const output = path.join(outputDir, 'one-connection.mp4');
      const ms = await fetchToFile(curl, url, output);
      await rm(output, { force: true });
      return rate(ms);
    },
  };
  if (aria2c) {
    contenders[ARIA2C] = async () => {
      const name = 'aria2c.mp4';
      const ms = await timedRun(aria2c, [
        // Whatever the user's aria2.conf says, quiet, and the file under this name whatever is there.
        ...['--no-conf=true', '--console-log-level=warn', '--summary-interval=0'],
        ...['--allow-overwrite=true', '--auto-file-renaming=false', '--file-allocation=none'],
        ...['-x', '8', '-s', '8', '-k', '1M', '-d', outputDir, '-o', name, url],
      ]);
      const output = path.join(outputDir, name);
      const fetched = await sha256OfFile(output);
      await rm(output, { force: true });
      if (fetched !== sha256) throw new Error(`aria2c fetched ${url} with sha256 ${fetched}, where the source file's is ${sha256}`);
      return rate(ms);
    };
  }
  return contenders;
}

import { rm } from 'node:fs/promises';
import path from 'node:path';
import { createdToCompletedMs, downloadThroughService } from '../api.ts';
import type { Bench } from '../context.ts';
import { HLS_SEGMENTS } from '../media.ts';
import { timedRun, type Server } from '../processes.ts';
import { median, milliseconds, ratioAtLeast, row, type Row } from '../table.ts';
import { eachLatest, takeTurns } from '../turns.ts';

// Scenario 2: an HLS stream of many short segments from a server that answers every request
// `latencyMs` late, fetched through the service and by ffmpeg itself (the same binary the service
// remuxes with, copying into MP4 as the service does), and by yt-dlp when it is installed. Same
// server, same latency, same run, taking turns.

const ROUNDS = 3;
const SERVICE = 'service';

export async function benchHls(bench: Bench, service: Server, slowOrigin: Server, latencyMs: number): Promise<Row[]> {
  const url = `${slowOrigin.url}/${bench.media.hlsPlaylist}`;
  const output = path.join(bench.runDir, 'hls.mp4');
  const cleanAfter = (run: Promise<number>) => run.finally(() => rm(output, { force: true }));
  const contenders: Record<string, () => Promise<number>> = {
    [SERVICE]: async () => {
      const download = await downloadThroughService(service.url, url);
      if ((download.file?.duration_seconds ?? 0) < HLS_SEGMENTS - 1) {
        throw new Error(`the service's HLS download lasts ${download.file?.duration_seconds} s, not the stream's ${HLS_SEGMENTS} s`);
      }
      return createdToCompletedMs(download);
    },
    'ffmpeg -c copy': () =>
      cleanAfter(
        timedRun(bench.ffmpeg, [
          '-nostdin',
          '-loglevel',
          'error',
          '-y',
          '-i',
          url,
          '-c',
          'copy',
          '-bsf:a',
          'aac_adtstoasc',
          '-movflags',
          '+faststart',
          '-f',
          'mp4',
          output,
        ]),
      ),
  };
  const ytDlp = bench.tools.ytDlp;
  if (!ytDlp) bench.progress('yt-dlp is absent: HLS is compared with ffmpeg only (apt-get install yt-dlp)');
  if (ytDlp) {
    contenders['yt-dlp'] = () =>
      cleanAfter(
        timedRun(ytDlp, [
          '--quiet',
          '--no-warnings',
          '--no-cache-dir',
          '--no-part',
          '--concurrent-fragments',
          '8',
          '--ffmpeg-location',
          bench.ffmpeg,
          '--output',
          output,
          url,
        ]),
      );
  }

  const times = await takeTurns(bench, ROUNDS, contenders, eachLatest(milliseconds));
  const figure = `HLS, ${HLS_SEGMENTS} segments, ${latencyMs} ms latency: time`;
  return Object.keys(contenders)
    .filter((name) => name !== SERVICE)
    .map((name) =>
      row(
        figure,
        median(times[SERVICE]!),
        { label: name, value: median(times[name]!) },
        'lower',
        milliseconds,
        name === 'yt-dlp' ? ratioAtLeast(2.5, '≥ 2.5 (2.5× faster)') : ratioAtLeast(8, '≥ 8 (8× faster)'),
      ),
    );
}

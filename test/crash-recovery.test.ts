import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Download } from './support/api.ts';
import { frameHashes } from './support/ffmpeg.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { killServiceProcesses } from './support/service-process.ts';
import { segmentedMedia } from './support/streams/segmented-media.ts';
import { useProcessSetting } from './support/process-setting.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

const setting = useProcessSetting();
const { source } = setting;

// A killed worker's claim on its download holds until its lease runs out (30 s after its last
// renewal), so the next process takes the download over only then.
const TAKEOVER_MS = 60_000;

const startProcess = (env: Record<string, string> = {}) => setting.start(env);

test('when the process is killed with SIGKILL mid-download and restarted on the same data, then orphaned partial files go at start and the download finishes from its checkpoint', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const url = source.file('/big.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 4) });

  const first = await startProcess();
  const created = await first.http.createDownload({ url });
  expect(created.status).toBe(202);
  const id = (created.body as Download).id;
  await waitForProgress(first.http, id, size / 4);

  await first.kill('SIGKILL');
  // The fixture learns of the dead connection a moment after the kernel closes it.
  const [cut] = source.requestsFor('/big.mp4');
  await waitFor('the fixture to see the connection drop', () => cut!.outcome !== undefined);
  expect(cut!.outcome).toBe('aborted');
  const sentBeforeKill = cut!.bytesSent;
  const partialFile = path.join(setting.dataDir, 'partial', id, 'direct.part');
  // The spans written are recorded after the bytes, at most a second behind them.
  const spans = JSON.parse(await readFile(path.join(setting.dataDir, 'partial', id, 'direct.kept'), 'utf8')) as Array<{ start: number; end: number }>;
  expect(spans).toEqual([{ start: 0, end: expect.any(Number) }]);
  const kept = spans[0]!.end;
  expect((await stat(partialFile)).size).toBeGreaterThanOrEqual(kept);
  expect(kept).toBeGreaterThan(0);
  expect(kept).toBeLessThan(size);

  // What a download whose row is gone (or a crash before its row was written) leaves behind.
  const orphan = path.join(setting.dataDir, 'partial', randomUUID());
  await mkdir(orphan);
  await writeFile(path.join(orphan, 'direct.part'), 'bytes nobody will ask for again');

  const second = await startProcess();
  // The start-up sweep runs before the API listens; the live download's checkpoint must survive it.
  expect(existsSync(orphan)).toBe(false);
  expect((await stat(partialFile)).size).toBeGreaterThanOrEqual(kept);

  const done = await second.waitForStatus(id, ['completed'], TAKEOVER_MS);
  const expected = await sha256File(mediaPath('big.mp4'));
  expect(done.file?.sha256).toBe(expected);
  expect(await sha256File(path.join(setting.dataDir, 'files', id))).toBe(expected);
  expect(existsSync(path.join(setting.dataDir, 'partial', id))).toBe(false);

  const requests = source.requestsFor('/big.mp4');
  expect(requests.map((request) => request.range)).toEqual([undefined, `bytes=${kept}-`]);
  // Only what had left the source but not reached the disk when the process died is fetched twice.
  const sent = requests.reduce((sum, request) => sum + request.bytesSent, 0);
  expect(sent - size).toBeLessThanOrEqual(sentBeforeKill - kept);
}, 90_000);

test('when the process is killed with SIGKILL mid-way through an HLS stream, then the restarted service asks only for the segments it had not recorded', async () => {
  // A service left from an earlier test would share the queue and could take the job instead.
  await killServiceProcesses();
  const media = await segmentedMedia();
  // One segment a second, one at a time: the kill lands after a few whole segments, long before the last.
  const segments = media.hlsSegments.map((file) => ({ name: path.basename(file), file, size: 0 }));
  for (const segment of segments) {
    segment.size = (await stat(segment.file)).size;
    source.file(`/killed-hls/${segment.name}`, segment.file, { script: [{ delayMs: 1000, times: Infinity }] });
  }
  const playlist = [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    '#EXT-X-TARGETDURATION:1',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    ...segments.flatMap((segment) => ['#EXTINF:1.0,', segment.name]),
    '#EXT-X-ENDLIST',
    '',
  ].join('\n');
  const url = source.content('/killed-hls/index.m3u8', playlist, { contentType: 'application/vnd.apple.mpegurl' });
  const asked = (name: string) => source.requestsFor(`/killed-hls/${name}`).length;

  const first = await startProcess({ SEGMENT_CONCURRENCY: '1' });
  const id = ((await first.http.createDownload({ url })).body as Download).id;
  await waitForProgress(first.http, id, segments[0]!.size + segments[1]!.size + segments[2]!.size);
  await first.kill('SIGKILL');
  const askedBeforeKill = segments.map((segment) => asked(segment.name));
  expect(askedBeforeKill.at(-1)).toBe(0);

  const second = await startProcess({ SEGMENT_CONCURRENCY: '1' });
  const done = await second.waitForStatus(id, ['completed'], TAKEOVER_MS);
  expect(await frameHashes(path.join(setting.dataDir, 'files', id))).toEqual(await frameHashes(media.sourceTs));
  expect(done.file?.duration_seconds).toBeGreaterThan(5.5);
  // The record trails the file by at most a second: the first two segments are in it whatever the
  // moment of the kill, and no segment is asked for more than once after it.
  expect(asked(segments[0]!.name)).toBe(1);
  expect(asked(segments[1]!.name)).toBe(1);
  for (const [i, segment] of segments.entries()) expect(asked(segment.name) - askedBeforeKill[i]!).toBeLessThanOrEqual(1);
  await second.kill('SIGTERM');
}, 120_000);

test('when every attempt a download may have ends with its process killed, then the restarted service fails it as processing_failed instead of running it again', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const url = source.file('/killer.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 8) });
  // A service left from an earlier test would share the queue and could take the job instead.
  await killServiceProcesses();

  const first = await startProcess({ MAX_ATTEMPTS: '1' });
  const created = await first.http.createDownload({ url });
  const id = (created.body as Download).id;
  await waitForProgress(first.http, id, size / 16);
  await first.kill('SIGKILL');

  const second = await startProcess({ MAX_ATTEMPTS: '1' });
  const done = await second.waitForStatus(id, ['failed', 'completed'], TAKEOVER_MS);
  expect(done).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'processing_failed', retryable: false } });
  // The second attempt fetched nothing: it failed before reaching the source.
  expect(source.requestsFor('/killer.mp4')).toHaveLength(1);
  await waitFor('the working files to go', () => !existsSync(path.join(setting.dataDir, 'partial', id)));
  await second.kill('SIGTERM');
}, 90_000);

test('when the process is killed with SIGKILL while yt-dlp runs, then the next start removes the HOME that run left, and nothing else in the temporary directory', async () => {
  const tmp = await mkdtemp(path.join(tmpdir(), 'crash-ytdlp-'));
  const record = path.join(tmp, 'run');
  // A stand-in that answers --version and otherwise records its HOME and process group, then hangs.
  const fake = path.join(tmp, 'fake-yt-dlp');
  await writeFile(fake, `#!/bin/sh\n[ "$1" = --version ] && { echo 2023.03.04; exit 0; }\necho "$HOME $$" > '${record}'\nexec sleep 60\n`);
  await chmod(fake, 0o755);
  // Names a start must leave: a live process's run, a scratch folder of another prefix, another user's folder.
  const kept = [`vds-ytdlp-home-${process.pid}-abcDEF`, 'vds-ytdlp-test-abcdef', 'vds-ytdlp-home-4194305-Other1'];
  for (const name of kept) await mkdir(path.join(tmp, name));
  await chown(path.join(tmp, kept[2]!), 65534, 65534);
  const env = { TMPDIR: tmp, YTDLP_PATH: fake };
  // A service left from an earlier test would share the queue and could take the job instead.
  await killServiceProcesses();
  let runGroup: number | undefined;
  try {
    const first = await startProcess(env);
    const url = source.content('/no-video-here.html', '<!DOCTYPE html><html><body><p>Nothing to see.</p></body></html>', { contentType: 'text/html' });
    const id = ((await first.http.createDownload({ url })).body as Download).id;
    await waitFor('yt-dlp to run', () => existsSync(record), 20_000);
    const [home, pid] = (await readFile(record, 'utf8')).trim().split(' ');
    runGroup = Number(pid);
    expect(path.dirname(home!)).toBe(tmp);
    expect(existsSync(home!)).toBe(true);

    await first.kill('SIGKILL');
    const second = await startProcess(env);
    expect(existsSync(home!)).toBe(false);
    for (const name of kept) expect(existsSync(path.join(tmp, name))).toBe(true);
    await second.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
    await second.kill('SIGTERM');
  } finally {
    // The killed process's yt-dlp runs on in a process group of its own.
    if (runGroup) process.kill(-runGroup, 'SIGKILL');
    await rm(tmp, { recursive: true, force: true });
  }
}, 90_000);

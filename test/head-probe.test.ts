import { copyFile, mkdtemp, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HeadProbe } from '../src/media/head-probe.ts';
import { probe } from '../src/media/probe.ts';
import { resolveFfmpeg, runFfmpeg } from './support/ffmpeg.ts';

// A fast-start MP4 is probed from its head while the rest of its download arrives: what ffmpeg
// says of the head must be what it says of the whole file, and any other file is left to the probe
// of the whole.

let dir: string;
let ffmpeg: string;
const file = (name: string) => path.join(dir, name);
const clip = [
  ...['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25:duration=10', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=10'],
  ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'vds-head-probe-'));
  ffmpeg = await resolveFfmpeg();
  await runFfmpeg([...clip, '-movflags', '+faststart', file('fast.mp4')]);
  await runFfmpeg([...clip, file('tail.mp4')]);
  await runFfmpeg([...clip, '-movflags', 'frag_keyframe+empty_moov', file('fragmented.mp4')]);
}, 60_000);

afterAll(() => rm(dir, { recursive: true, force: true }));

/** The first `bytes` of `name`, in a file of their own: all a download would have of it so far. */
async function headOf(name: string, bytes: number): Promise<string> {
  const head = file(`${name}.head`);
  await copyFile(file(name), head);
  const handle = await open(head, 'r+');
  await handle.truncate(bytes);
  await handle.close();
  return head;
}

test('when only the head of a fast-start MP4 has arrived, then ffmpeg describes it from there as it describes the whole file', async () => {
  const size = (await stat(file('fast.mp4'))).size;
  const headBytes = 256 * 1024;
  expect(size).toBeGreaterThan(4 * headBytes);
  const head = new HeadProbe(ffmpeg, await headOf('fast.mp4', headBytes), AbortSignal.timeout(30_000));
  head.grew(64 * 1024);
  head.grew(headBytes);
  const early = await head.result();
  const whole = await probe({ ffmpeg, file: file('fast.mp4') });
  expect(early).not.toBeNull();
  expect(early).toEqual(whole);
  expect(early!.durationSeconds).toBeCloseTo(10, 0);
  expect(early!.width).toBe(640);
});

test.each([
  ['whose index comes after its media', 'tail.mp4'],
  ['that is fragmented', 'fragmented.mp4'],
])('when an MP4 %s arrives, then it is not probed from its head (the whole file is)', async (_what, name) => {
  const size = (await stat(file(name))).size;
  const head = new HeadProbe(ffmpeg, file(name), AbortSignal.timeout(30_000));
  head.grew(size);
  expect(await head.result()).toBeNull();
});

/** The ffmpeg runs of this process that read a pipe, as their pids. */
async function pipeProbes(): Promise<string[]> {
  const tasks = await readdir(`/proc/${process.pid}/task`);
  const children = (await Promise.all(tasks.map((task) => readFile(`/proc/${process.pid}/task/${task}/children`, 'utf8').catch(() => ''))))
    .join(' ')
    .split(/\s+/)
    .filter(Boolean);
  const commands = await Promise.all(children.map(async (pid) => [pid, await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')] as const));
  return commands.filter(([, command]) => command.includes('pipe:0')).map(([pid]) => pid);
}

test('when the download stops while ffmpeg waits for more of the head, then ffmpeg is stopped and the probe ends with nothing', async () => {
  const before = await pipeProbes();
  const head = new HeadProbe(ffmpeg, await headOf('fast.mp4', 40 * 1024), AbortSignal.timeout(30_000));
  head.grew(40 * 1024);
  // ffmpeg starts, and waits on the pipe for bytes that are not written yet.
  let waiting: string[] = [];
  for (let tries = 0; waiting.length === 0 && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    waiting = (await pipeProbes()).filter((pid) => !before.includes(pid));
  }
  expect(waiting).toHaveLength(1);
  head.cancel();
  expect(await head.result()).toBeNull();
  for (let tries = 0; (await pipeProbes()).includes(waiting[0]!) && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await pipeProbes()).not.toContain(waiting[0]);
});

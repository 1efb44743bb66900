import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Download } from './support/api.ts';
import { startTestService, type TestService } from './support/api.ts';
import { expectPlain, runOnTerminal, startCli, type Started } from './support/cli-process.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { unusedPort } from './support/ports.ts';
import { waitFor } from './support/waiting.ts';

// `vds` as a person runs it, against the real service and a real source.

const API_KEY = 'cli-test-key-31c9';

const { app, source } = useService();
let guarded: TestService;
let work: string;

beforeAll(async () => {
  guarded = await startTestService({ apiKeys: [API_KEY] });
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-cli-'));
});

afterAll(async () => {
  await guarded?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

function start(args: string[], env: Record<string, string> = {}): Started {
  return startCli(args, work, { VDS_SERVER: app.service.url, ...env });
}

const vds = (args: string[], env?: Record<string, string>) => start(args, env).done;

test('when vds get downloads a file, then the saved file is the source, it exits 0, and piped output is plain lines', async () => {
  const target = path.join(work, 'clip.mp4');
  const run = await vds(['get', source.file('/clip.mp4', mediaPath('clip.mp4')), '-o', target]);
  expect(run).toMatchObject({ code: 0, stdout: `${target}\n` });
  expect((await readFile(target)).equals(await readFile(mediaPath('clip.mp4')))).toBe(true);
  expect(run.stderr).toMatch(/^download [0-9a-f-]{36}\n/);
  expect(run.stderr).toMatch(/\ncompleted\n/);
  expect(run.stderr).toMatch(/sha256 [0-9a-f]{64} checked/);
  expectPlain(run);
});

test('when -o names a directory, then the file takes the name the service gave it', async () => {
  const run = await vds(['get', source.file('/named.mp4', mediaPath('clip.mp4')), '-o', work, '--filename', 'my clip.mp4']);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe(`${path.join(work, 'my clip.mp4')}\n`);
  expect((await stat(path.join(work, 'my clip.mp4'))).size).toBe((await stat(mediaPath('clip.mp4'))).size);
});

test('when -o ends in a separator and names no folder yet, then vds makes it and saves the file into it', async () => {
  const folder = path.join(work, 'clips', 'new');
  const run = await vds(['get', source.file('/into.mp4', mediaPath('clip.mp4')), '-o', `${folder}/`]);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe(`${path.join(folder, 'into.mp4')}\n`);
  expect((await readFile(path.join(folder, 'into.mp4'))).equals(await readFile(mediaPath('clip.mp4')))).toBe(true);
});

test('when --audio and --audio-format mp3 are given, then the saved file is the sound as .mp3; vds status says where it came from', async () => {
  const run = await vds(['get', source.file('/sound.mp4', mediaPath('clip.mp4')), '--audio', '--audio-format', 'mp3', '-o', `${work}/`]);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe(`${path.join(work, 'sound.mp3')}\n`);
  const id = /^download ([0-9a-f-]{36})$/m.exec(run.stderr)![1]!;
  const status = await vds(['status', id]);
  expect(status.stdout).toMatch(/^source: a file$/m);
  expect(status.stdout).toMatch(/^file: sound\.mp3 \(.*, audio\/mpeg\)$/m);
});

test('when --clip 0:01-0:02 is given, then the download asks for that clip and the saved file is no longer than it', async () => {
  const run = await vds(['get', source.file('/part.mp4', mediaPath('clip.mp4')), '--clip', '0:01-0:02', '-o', `${work}/`]);
  expect(run.code).toBe(0);
  const id = /^download ([0-9a-f-]{36})$/m.exec(run.stderr)![1]!;
  const done = (await app.http.getDownload(id)).body as Download;
  expect(done.clip).toEqual({ start_seconds: 1, end_seconds: 2 });
  // The only keyframe of the 3-second source is its first: the clip is kept from there to 2 s.
  expect(done.file!.duration_seconds).toBeLessThan(2.1);
});

test.each([
  ['--audio-format without --audio', ['--audio-format', 'mp3']],
  ['--audio with --mute', ['--audio', '--mute']],
  ['an audio format it does not know', ['--audio', '--audio-format', 'wav']],
  ['subtitles that are no language tags', ['--subs', 'english please']],
  ['a clip that ends before it starts', ['--clip', '2:00-1:30']],
])('when vds get has %s, then it exits 2 before asking the service', async (_case, args) => {
  const run = await vds(['get', source.url('/never-asked.mp4'), ...args]);
  expect(run.code).toBe(2);
  // Said, not only exited with.
  expect(run.stderr).toMatch(/error: .*(option|argument)/);
  expect(source.requestsFor('/never-asked.mp4')).toHaveLength(0);
});

test('when the source fails, then vds exits 1 with the error code and message, and saves nothing', async () => {
  const run = await vds(['get', source.url('/gone.mp4'), '-o', path.join(work, 'gone.mp4')]);
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(/vds: Download [0-9a-f-]{36} failed \(source_http_error\): The source answered HTTP 404/);
  await expect(stat(path.join(work, 'gone.mp4'))).rejects.toThrow();
  expectPlain(run);
});

test.each([
  [['get'], /missing required argument 'url'/],
  [['get', 'http://127.0.0.1/a.mp4', '-q', 'tall'], /Use best, worst, or a height/],
  [['list', '--status', 'done'], /Unknown status done/],
  [['frobnicate'], /unknown command 'frobnicate'/],
  [['get', 'http://127.0.0.1/a.mp4', '--nope'], /unknown option '--nope'/],
  [['status', 'not-a-uuid'], /A download id is a UUID/],
  [['cancel', '../../etc/passwd'], /A download id is a UUID/],
])('when the command line is %j, then vds exits 2 and says what is wrong', async (args, said) => {
  const run = await vds(args);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(said);
  expect(run.stdout).toBe('');
});

test('when the service refuses the request, then vds says its problem as a sentence and exits 1', async () => {
  const run = await vds(['get', 'ftp://127.0.0.1/a.mp4']);
  expect(run.code).toBe(1);
  expect(run.stderr).toMatch(/^vds: The request is invalid\. url must be a full link starting with http:\/\/ or https:\/\//m);
  expect(run.stderr).not.toMatch(/[{}]/);
});

test('when the API key is wrong, then vds says so in a sentence and exits 1; the right one works', async () => {
  const wrong = await vds(['list', '--api-key', 'not-the-key'], { VDS_SERVER: guarded.service.url });
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toMatch(/^vds: .*key/im);
  expect(wrong.stderr).not.toMatch(/[{}]/);
  const right = await vds(['list'], { VDS_SERVER: guarded.service.url, VDS_API_KEY: API_KEY });
  expect(right).toMatchObject({ code: 0, stderr: 'no downloads\n' });
});

test('when no service answers, then vds names the server and how to choose another', async () => {
  const nowhere = `http://127.0.0.1:${await unusedPort()}`;
  const run = await vds(['status', '00000000-0000-4000-8000-000000000000', '--server', nowhere]);
  expect(run.code).toBe(1);
  expect(run.stderr).toBe(`vds: Could not reach the service at ${nowhere} (ECONNREFUSED); set --server or VDS_SERVER.\n`);
});

test('when status, list and cancel are run, then they print the download, the list, and what the cancel did', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const created = (await app.http.createDownload({ url: source.file('/slow.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 30) }) }))
    .body as Download;
  await app.waitForStatus(created.id, ['downloading']);

  const shown = await vds(['status', created.id]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(new RegExp(`^id: ${created.id}\nstatus: downloading\nurl: ${created.url}\n`));

  const listed = await vds(['list', '--status', 'downloading,queued', '--limit', '5']);
  expect(listed.code).toBe(0);
  expect(listed.stdout.split('\n').find((line) => line.startsWith(created.id))).toMatch(/ downloading /);

  const cancelled = await vds(['cancel', created.id]);
  expect(cancelled).toMatchObject({ code: 0, stdout: `${created.id}: cancelled\n` });
  expect((await app.http.getDownload(created.id)).body.status).toBe('cancelled');
  expectPlain(cancelled);
});

test('when Ctrl-C interrupts a slow get, then vds exits 130 and says how to look again, and the download goes on', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const running = start([
    'get',
    source.file('/interrupted.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 30) }),
    '-o',
    path.join(work, 'x.mp4'),
  ]);
  const id = await waitFor('vds to print the download id', () => /^download ([0-9a-f-]{36})$/m.exec(running.stderrSoFar())?.[1], 15_000);
  await waitFor('the download to start', async () => ((await app.http.getDownload(id)).body as Download).status === 'downloading', 15_000);
  running.kill('SIGINT');
  const run = await running.done;
  expect(run.code).toBe(130);
  expect(run.stderr).toMatch(new RegExp(`vds: Stopped waiting\\. The download goes on; see it with: vds status ${id}\\n$`));
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('downloading');
  await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
});

test('when Ctrl-C interrupts a get before the service answered, then vds exits 130 and says where to look', async () => {
  source.route('/silent/downloads', () => {}); // accepts the request and never answers
  const running = start(['get', source.url('/clip.mp4'), '-o', work], { VDS_SERVER: source.url('/silent') });
  await waitFor('the create to reach the silent service', () => source.requestsFor('/silent/downloads').length === 1, 15_000);
  running.kill('SIGINT');
  const run = await running.done;
  expect(run).toMatchObject({ code: 130, stdout: '' });
  expect(run.stderr).toBe('vds: Stopped before the service answered; vds list shows whether the download was created.\n');
});

test('when Ctrl-C interrupts vds status waiting for an answer, then vds exits 130', async () => {
  const id = '00000000-0000-4000-8000-000000000001';
  source.route(`/silent/downloads/${id}`, () => {});
  const running = start(['status', id], { VDS_SERVER: source.url('/silent') });
  await waitFor('the request to reach the silent service', () => source.requestsFor(`/silent/downloads/${id}`).length === 1, 15_000);
  running.kill('SIGINT');
  expect(await running.done).toMatchObject({ code: 130, stdout: '', stderr: 'vds: Stopped before the service answered.\n' });
});

test('when vds get runs on a terminal, then it draws a bar with bytes, speed and ETA, and says processing in words', async () => {
  // util-linux's `script` gives the CLI a pseudo-terminal, as a person's shell would.
  const target = path.join(work, 'tty.mp4');
  const size = (await stat(mediaPath('big.mp4'))).size;
  const url = source.file('/tty.mp4', mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 3) });
  const { code, output } = await runOnTerminal(['get', url, '-o', target], work, { VDS_SERVER: app.service.url });
  expect(code).toBe(0);
  expect(output).toMatch(/downloading +\[[█░]+\] \d+% \| [\d.]+ [KM]?B of [\d.]+ [KM]?B \| [\d.]+ [KM]?B\/s \| ETA \d+s/);
  expect(output).toMatch(/saving +\[[█░]+\] 100% \| [\d.]+ [KM]B of [\d.]+ [KM]B \| .+ \| ETA /);
  expect(output).toContain('\x1b['); // drawn in place, unlike the piped lines
  expect(output).toMatch(/\nprocessing\r?\n/); // no bar for a phase that has no bytes to count
  expect(output).not.toMatch(/processing +\[/);
  expect((await readFile(target)).equals(await readFile(mediaPath('big.mp4')))).toBe(true);
});

test('when -o names a folder that does not exist, then vds says so before any download is created', async () => {
  const before = (await app.http.request('GET', '/downloads?limit=100', '/downloads')).body.items.length as number;
  const run = await vds(['get', source.file('/nowhere.mp4', mediaPath('clip.mp4')), '-o', path.join(work, 'missing', 'sub', 'x.mp4')]);
  expect(run.code).toBe(1);
  expect(run.stderr).toBe(`vds: Cannot write into ${path.join(work, 'missing', 'sub')}; choose another -o.\n`);
  expect((await app.http.request('GET', '/downloads?limit=100', '/downloads')).body.items).toHaveLength(before);
});

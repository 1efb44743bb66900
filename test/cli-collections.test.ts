import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Download } from './support/api.ts';
import { expectPlain, runOnTerminal, startCli, type Run } from './support/cli-process.ts';
import { childrenOf, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { waitFor } from './support/waiting.ts';

// `vds get` on several entries (a batch of URLs here; a URL that expands to several is the same
// collection once expanded): every entry saved into one folder named after the collection, one
// overall progress line, and the entries that have no file named, with exit 1.

const { app, source } = useService();
let work: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-cli-collections-'));
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const start = (args: string[]) => startCli(args, work, { VDS_SERVER: app.service.url });
const vds = (args: string[]): Promise<Run> => start(args).done;

const collectionIdOf = (run: Run) => /^collection ([0-9a-f-]{36})$/m.exec(run.stderr)?.[1];

async function collectionOf(run: Run): Promise<Collection> {
  const id = collectionIdOf(run);
  expect(id).toBeDefined();
  return (await app.http.request('GET', `/collections/${id}`, '/collections/{collection_id}')).body as Collection;
}

test('when vds get is given several URLs, then it saves each into the folder named after the collection, one progress line for all, and exits 0', async () => {
  const clip = mediaPath('clip.mp4');
  const urls = ['/one/a.mp4', '/one/b.mp4', '/one/c.mp4'].map((route) => source.file(route, clip));
  const run = await vds(['get', ...urls, '--name', 'Three: clips?']);

  expect(run.code).toBe(0);
  // The service cleans a given name as it cleans a file name.
  const folder = path.join(work, 'Three clips');
  expect(run.stdout.split('\n').filter(Boolean).sort()).toEqual(['a.mp4', 'b.mp4', 'c.mp4'].map((name) => path.join('Three clips', name)));
  const expected = await sha256File(clip);
  for (const name of ['a.mp4', 'b.mp4', 'c.mp4']) expect(await sha256File(path.join(folder, name))).toBe(expected);
  expect((await readdir(folder)).sort()).toEqual(['a.mp4', 'b.mp4', 'c.mp4']);

  const collection = await collectionOf(run);
  expect(collection).toMatchObject({ kind: 'batch', name: 'Three clips', status: 'completed' });
  // Piped, the one overall line is written again each time another entry is done: never one line per entry's bytes.
  const progress = run.stderr.split('\n').filter((line) => / done, /.test(line));
  expect(progress.at(-1)).toMatch(/^3\/3 done, [\d.]+ [KM]B saved$/);
  expect(progress.map((line) => Number(line.split('/')[0]))).toEqual([...new Set(progress.map((line) => Number(line.split('/')[0])))].sort());
  expect(run.stderr).toMatch(/\nsaved 3 of 3 into Three clips \([\d.]+ [KM]B\), each sha256 checked\n$/);
  expectPlain(run);
});

test('when the entries have the same file name and the collection has none, then the folder is named from its id and no file overwrites another', async () => {
  const clip = mediaPath('clip.mp4');
  const urls = ['/x/clip.mp4', '/y/clip.mp4'].map((route) => source.file(route, clip));
  const run = await vds(['get', ...urls]);
  expect(run.code).toBe(0);
  const collection = await collectionOf(run);
  expect(collection.name).toBeNull();
  const folder = path.join(work, `collection-${collection.id.slice(0, 8)}`);
  expect((await readdir(folder)).sort()).toEqual(['clip (2).mp4', 'clip.mp4']);
  for (const name of await readdir(folder)) expect(await sha256File(path.join(folder, name))).toBe(await sha256File(clip));
});

test('when -o names a folder that does not exist, then the entries are saved into it', async () => {
  const folder = path.join(work, 'chosen');
  const urls = ['/o/a.mp4', '/o/b.mp4'].map((route) => source.file(route, mediaPath('clip.mp4')));
  const run = await vds(['get', ...urls, '-o', folder, '--name', 'ignored as a folder']);
  expect(run.code).toBe(0);
  expect((await readdir(folder)).sort()).toEqual(['a.mp4', 'b.mp4']);
});

test('when one entry fails, then the others are saved, the failed one is named with its error, and vds exits 1', async () => {
  const clip = mediaPath('clip.mp4');
  const urls = [source.file('/mixed/a.mp4', clip), source.url('/mixed/missing.mp4'), source.file('/mixed/c.mp4', clip)];
  const run = await vds(['get', ...urls, '--name', 'Mixed']);

  expect(run.code).toBe(1);
  const folder = path.join(work, 'Mixed');
  expect((await readdir(folder)).sort()).toEqual(['a.mp4', 'c.mp4']);
  expect(run.stderr).toContain(`\nentry 2 failed (source_http_error): The source answered HTTP 404`);
  expect(run.stderr).toContain(`: ${urls[1]}\n`);
  expect(run.stderr).toMatch(/\nsaved 2 of 3 into .*\nvds: 1 of 3 entries were not saved \(listed above\)\.\n$/);
  expect((await collectionOf(run)).counts).toMatchObject({ total: 3, completed: 2, failed: 1 });
  expectPlain(run);
});

test('when --pick chooses positions of a URL, then the collection takes only those, and its entries go into its folder', async () => {
  const url = source.file('/picked.mp4', mediaPath('clip.mp4'));
  const run = await vds(['get', url, '--pick', '1', '--name', 'Picked']);
  expect(run.code).toBe(0);
  const collection = await collectionOf(run);
  expect(collection).toMatchObject({ kind: 'playlist', url, options: { entries: [1] }, status: 'completed' });
  expect(await readdir(path.join(work, 'Picked'))).toEqual(['picked.mp4']);
  const children = await childrenOf(app.http, collection.id);
  expect(children.map((child: Download) => child.collection?.index)).toEqual([1]);
});

test('when --first is given and the URL holds one video, then it is saved as one file, as without --first, and no collection is made', async () => {
  const url = source.file('/first-single.mp4', mediaPath('clip.mp4'));
  const before = ((await app.http.request('GET', '/collections?limit=100', '/collections')).body as { items: Collection[] }).items.length;
  const run = await vds(['get', url, '--first', '3']);
  expect(run.code).toBe(0);
  expect(run.stdout).toBe('first-single.mp4\n');
  expect(run.stderr).toMatch(/^download [0-9a-f-]{36}\n/);
  expect((await stat(path.join(work, 'first-single.mp4'))).size).toBe((await stat(mediaPath('clip.mp4'))).size);
  expect(((await app.http.request('GET', '/collections?limit=100', '/collections')).body as { items: Collection[] }).items).toHaveLength(before);
});

test('when vds entries is asked what a URL holds, then it prints each entry numbered as --pick takes them, and creates nothing', async () => {
  const url = source.file('/listed.mp4', mediaPath('clip.mp4'));
  const run = await vds(['entries', url]);
  expect(run).toMatchObject({ code: 0, stderr: '1 entries\n' });
  expect(run.stdout).toMatch(new RegExp(`^  1 +${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n$`));
  expect(((await app.http.request('GET', '/collections?limit=100', '/collections')).body as { items: Collection[] }).items.map((c) => c.url)).not.toContain(
    url,
  );
});

test.each([
  [['--pick', '0'], /Use positions from vds entries, such as 1,3-5/],
  [['--pick', '3-1'], /Use positions from vds entries/],
  [['--pick', '1,x'], /Use positions from vds entries/],
  [['--pick', '2-501'], /Use positions from vds entries/],
  [['--first', '501'], /Use at most 500/],
  [['--first', '0'], /Use a whole number of at least 1/],
  [['--pick', '1', 'http://127.0.0.1/b.mp4'], /'--first' and '--pick' choose entries of one URL/],
  [['--filename', 'x.mp4', 'http://127.0.0.1/b.mp4'], /'--filename' names one file/],
])('when vds get has %j, then it exits 2 before asking the service', async (args, said) => {
  const run = await vds(['get', source.url('/never-asked.mp4'), ...args]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(said);
  expect(run.stdout).toBe('');
  expect(source.requestsFor('/never-asked.mp4')).toHaveLength(0);
});

test('when vds get on several entries runs on a terminal, then one bar counts the entries and the bytes saved', async () => {
  // util-linux's `script` gives the CLI a pseudo-terminal, as a person's shell would.
  const urls = ['/tty/a.mp4', '/tty/b.mp4'].map((route) => source.file(route, mediaPath('clip.mp4')));
  const { code, output } = await runOnTerminal(['get', ...urls, '--name', 'On a terminal'], work, { VDS_SERVER: app.service.url });
  expect(code).toBe(0);
  expect(output).toMatch(/saved +\[[█░]+\] 2\/2 entries \| [\d.]+ [KM]B saved/);
  expect(output).toContain('\x1b['); // drawn in place
  // One bar for the whole collection: never a bar of one entry's own bytes.
  expect(output).not.toMatch(/downloading +\[/);
  expect((await readdir(path.join(work, 'On a terminal'))).sort()).toEqual(['a.mp4', 'b.mp4']);
});

test('when Ctrl-C interrupts vds get on several entries, then it exits 130 and says how to see them; the collection goes on until vds cancel stops the rest', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const urls = ['/stopped/a.mp4', '/stopped/b.mp4'].map((route) => source.file(route, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 30) }));
  const running = start(['get', ...urls]);
  const id = await waitFor('vds to print the collection id', () => /^collection ([0-9a-f-]{36})$/m.exec(running.stderrSoFar())?.[1], 15_000);
  running.kill('SIGINT');
  const run = await running.done;
  expect(run.code).toBe(130);
  expect(run.stderr).toMatch(
    new RegExp(`vds: Stopped waiting\\. The collection goes on; see its downloads with: vds list --collection ${id}, or stop the rest: vds cancel ${id}\\n$`),
  );
  const listed = await vds(['list', '--collection', id]);
  expect(listed.code).toBe(0);
  expect(
    listed.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('  ').at(-1)),
  ).toEqual(urls);

  const cancelled = await vds(['cancel', id]);
  expect(cancelled).toMatchObject({ code: 0, stdout: `${id}: collection cancelled; 0 of 2 completed, their files kept\n` });
  const collection = (await app.http.request('GET', `/collections/${id}`, '/collections/{collection_id}')).body as Collection;
  expect(collection).toMatchObject({ status: 'cancelled', counts: { cancelled: 2 } });
  // An id that is neither a download's nor a collection's is said to be neither.
  const unknown = await vds(['cancel', '00000000-0000-4000-8000-000000000000']);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toBe('vds: No download or collection with id 00000000-0000-4000-8000-000000000000.\n');
});

test('when a batch holds a link that is not http or https, then vds names it in words, not as a pattern, and exits 1', async () => {
  const run = await vds(['get', source.url('/fine.mp4'), 'ftp://127.0.0.1/b.mp4']);
  expect(run.code).toBe(1);
  expect(run.stderr).toBe('vds: The request is invalid. urls/1 must be a full link starting with http:// or https://.\n');
});

test('when vds --help is asked, then it tells how to get several videos at once', async () => {
  const run = await vds(['--help']);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/vds entries PLAYLIST +its entries, numbered; then: vds get PLAYLIST --pick 1,3-5/);
  expect(run.stdout).toMatch(/vds get PLAYLIST --first 10/);
});

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startCli, type Run } from './support/cli-process.ts';
import type { Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';

// `vds get` on a URL that expands to several entries: an RSS feed this test serves, whose
// enclosures are files it serves too. (Needs the listing engine: the placeholder lists one entry.)

const { app, source } = useService();
let work: string;
let feed: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-cli-feed-'));
  const items = ['one', 'two', 'three'].map((name, i) => {
    const url = source.file(`/feed/${name}.mp4`, mediaPath('clip.mp4'));
    return `<item><title>Talk ${name}</title><guid>talk-${i + 1}</guid><enclosure url="${url}" type="video/mp4" length="1"/></item>`;
  });
  const rss = `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Local talks</title><link>${source.url('/')}</link>${items.join('')}</channel></rss>`;
  feed = source.content('/feed.xml', rss, { headers: { 'Content-Type': 'application/rss+xml; charset=utf-8' } });
});

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const vds = (args: string[], cwd = work): Promise<Run> => startCli(args, cwd, { VDS_SERVER: app.service.url }).done;

async function collectionOf(run: Run): Promise<Collection> {
  const id = /^collection ([0-9a-f-]{36})$/m.exec(run.stderr)?.[1];
  expect(id).toBeDefined();
  return (await app.http.request('GET', `/collections/${id}`, '/collections/{collection_id}')).body as Collection;
}

test('when vds get is given a feed of three videos, then it asks nothing and saves all three into a folder named after the feed', async () => {
  const run = await vds(['get', feed]);
  expect(run.code).toBe(0);
  const folder = path.join(work, 'Local talks');
  expect((await readdir(folder)).sort()).toEqual(['one.mp4', 'three.mp4', 'two.mp4']);
  for (const name of await readdir(folder)) expect(await sha256File(path.join(folder, name))).toBe(await sha256File(mediaPath('clip.mp4')));
  expect(await collectionOf(run)).toMatchObject({ kind: 'playlist', name: 'Local talks', truncated: false, counts: { total: 3, completed: 3 } });
  expect(run.stderr).toMatch(/\n3\/3 done, [\d.]+ [KM]B saved\n/);
});

test('when --first 2 is given, then only the first two entries are saved, and the collection says the feed held more', async () => {
  const run = await vds(['get', feed, '--first', '2', '-o', path.join(work, 'first-two')]);
  expect(run.code).toBe(0);
  expect((await readdir(path.join(work, 'first-two'))).sort()).toEqual(['one.mp4', 'two.mp4']);
  expect(await collectionOf(run)).toMatchObject({ truncated: true, options: { limit: 2 }, counts: { total: 2 } });
});

test('when vds entries lists the feed, then each entry is numbered with its title; --pick 1,3 then saves those two', async () => {
  const listed = await vds(['entries', feed]);
  expect(listed.code).toBe(0);
  expect(
    listed.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) =>
        line
          .trim()
          .split(/\s{2,}/)
          .slice(0, 2),
      ),
  ).toEqual([
    ['1', 'Talk one'],
    ['2', 'Talk two'],
    ['3', 'Talk three'],
  ]);
  expect(listed.stderr).toBe('Local talks: 3 entries\n');

  const run = await vds(['get', feed, '--pick', '1,3', '-o', path.join(work, 'picked')]);
  expect(run.code).toBe(0);
  expect((await readdir(path.join(work, 'picked'))).sort()).toEqual(['one.mp4', 'three.mp4']);
  expect(await collectionOf(run)).toMatchObject({ options: { entries: [1, 3] }, counts: { total: 2, completed: 2 } });
});

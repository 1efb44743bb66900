import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AddressPolicy } from '../src/net/address-policy.ts';
import type { SiteReaderDeps } from '../src/sources/readers/site.ts';
import { listEntries, type Listing, type ListingDeps } from '../src/sources/listing/index.ts';
import { DocumentSandbox } from '../src/sources/sandbox/document-sandbox.ts';
import { ExtractionProxy } from '../src/sources/site/proxy.ts';
import { findYtDlp } from '../src/sources/site/ytdlp.ts';
import { runFfmpeg } from './support/ffmpeg.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { testSourceHttp } from './support/source-http.ts';
import { failure, processesWith, untilRunning } from './support/ytdlp-site.ts';

// A collection's expansion against real servers on 127.0.0.1: media made by ffmpeg here, feeds and
// pages served by the fixture server, and Debian's yt-dlp run for real through the service's own
// extraction proxy for what the service does not list itself (a JW Player playlist).

let source: FixtureServer;
let work: string;
let proxy: ExtractionProxy;
let site: SiteReaderDeps;
const http = testSourceHttp();
const sandbox = new DocumentSandbox();
const deps = (): ListingDeps => ({ http, site, sandbox, readTimeoutMs: 30_000 });

function list(url: string, options: { limit?: number; signal?: AbortSignal; deps?: ListingDeps } = {}): Promise<Listing> {
  return listEntries(options.deps ?? deps(), url, { limit: options.limit ?? 100, signal: options.signal ?? new AbortController().signal });
}

const page = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;
/** A page that JW Player sets up with a playlist: yt-dlp's generic extractor lists it; the page reader sees no video in it. */
const jwPlaylist = (title: string, files: string[]) =>
  page(
    title,
    `<div id="player"></div><script>jwplayer("player").setup({"playlist": [${files
      .map((file, index) => `{"file": "${file}", "title": "Clip ${index + 1}"}`)
      .join(', ')}]});</script>`,
  );

let clip: string;
let song: string;
let hls: string;

beforeAll(async () => {
  const ytdlp = await findYtDlp({ ytdlp: 'on', ytdlpPath: undefined });
  if (!ytdlp) throw new Error('These tests need yt-dlp on PATH.');
  work = await mkdtemp(path.join(os.tmpdir(), 'vds-listing-'));
  await runFfmpeg(['-f', 'lavfi', '-i', 'testsrc=size=64x36:rate=10', '-t', '1', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', path.join(work, 'clip.mp4')]);
  await runFfmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440', '-t', '1', '-c:a', 'aac', path.join(work, 'song.m4a')]);
  await runFfmpeg(['-i', path.join(work, 'clip.mp4'), '-c', 'copy', '-f', 'hls', '-hls_time', '1', '-hls_list_size', '0', path.join(work, 'stream.m3u8')]);
  source = await startFixtureServer();
  clip = source.file('/media/clip.mp4', path.join(work, 'clip.mp4'));
  song = source.file('/media/song.m4a', path.join(work, 'song.m4a'));
  source.directory('/hls', work);
  hls = source.url('/hls/stream.m3u8');
  proxy = await ExtractionProxy.start(new AddressPolicy(true));
  site = { ytdlp, proxy, timeoutMs: 30_000 };
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await source?.close();
  await http.close();
  await sandbox.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('time limits', () => {
  test("when a listing asks for a shorter read than the service's, then a source slower than that fails with source_timeout at its limit", async () => {
    const marker = randomBytes(4).toString('hex');
    // The feed starts and then stalls: its reading only ends at a deadline.
    source.route(`/slow-${marker}.rss`, (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/rss+xml' }).write('<?xml version="1.0"?><rss version="2.0"><channel><title>Slow</title>');
    });
    const started = Date.now();
    const reading = listEntries(deps(), source.url(`/slow-${marker}.rss`), { limit: 10, signal: new AbortController().signal, readTimeoutMs: 1500 });
    await expect(reading).rejects.toMatchObject({ code: 'source_timeout', message: expect.stringContaining('1.5 s') });
    // Well before the service's own 30 s.
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('feeds', () => {
  test("when an RSS feed is listed, then its items' enclosures are the entries, with guids, titles and durations, and yt-dlp is not asked", async () => {
    const feed = source.content(
      '/podcast/feed.rss',
      `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><title>The podcast</title>
<item><title>Sound</title><guid>ep-1</guid><itunes:duration>00:01</itunes:duration><enclosure url="../media/song.m4a" type="audio/mp4" length="1"/></item>
<item><title>Picture</title><guid>ep-2</guid><itunes:duration>1</itunes:duration><enclosure url="${clip}" type="video/mp4" length="1"/></item>
</channel></rss>`,
      { contentType: 'application/rss+xml' },
    );
    expect(await list(feed)).toEqual({
      title: 'The podcast',
      extractor: 'feed',
      truncated: false,
      entries: [
        { id: 'ep-1', url: song, title: 'Sound', durationSeconds: 1, extractor: null, upcoming: false },
        { id: 'ep-2', url: clip, title: 'Picture', durationSeconds: 1, extractor: null, upcoming: false },
      ],
    });
    // Asked for once: by the service, never by yt-dlp.
    expect(source.requestsFor('/podcast/feed.rss')).toHaveLength(1);
  });

  test('when an Atom feed is listed with a limit below its entries, then the first are listed, truncated', async () => {
    const entry = (id: number, href: string) => `<entry><id>tag:clips,${id}</id><title>Clip ${id}</title><link rel="enclosure" href="${href}"/></entry>`;
    const feed = source.content(
      '/clips.atom',
      `<feed xmlns="http://www.w3.org/2005/Atom"><title>Clips</title>${entry(1, clip)}${entry(2, song)}${entry(3, hls)}</feed>`,
      { contentType: 'application/atom+xml' },
    );
    expect(await list(feed, { limit: 2 })).toEqual({
      title: 'Clips',
      extractor: 'feed',
      truncated: true,
      entries: [
        { id: 'tag:clips,1', url: clip, title: 'Clip 1', durationSeconds: null, extractor: null, upcoming: false },
        { id: 'tag:clips,2', url: song, title: 'Clip 2', durationSeconds: null, extractor: null, upcoming: false },
      ],
    });
  });
});

describe('pages', () => {
  test('when a page holds two videos, then they are the entries, found by the service alone (the page is asked for once)', async () => {
    const url = source.content(
      '/two/index.html',
      page('Two videos', `<video src="${clip}" title="The clip"></video><audio controls><source src="../media/song.m4a"></audio>`),
    );
    expect(await list(url)).toEqual({
      title: 'Two videos',
      extractor: 'page',
      truncated: false,
      entries: [
        { id: null, url: clip, title: 'The clip', durationSeconds: null, extractor: null, upcoming: false },
        { id: null, url: song, title: null, durationSeconds: null, extractor: null, upcoming: false },
      ],
    });
    expect(source.requestsFor('/two/index.html')).toHaveLength(1);
  });

  test("when a page holds one video, then yt-dlp finds one video there, and the page itself is the one entry, with the page's title", async () => {
    const url = source.content('/one/watch.html', page('One video', `<video src="${clip}"></video>`));
    // yt-dlp calls it "One video (1)"; the download of the page would be named by the page.
    expect(await list(url)).toEqual({
      title: 'One video',
      extractor: 'HTML5MediaEmbed',
      truncated: false,
      entries: [{ id: null, url, title: 'One video', durationSeconds: null, extractor: null, upcoming: false }],
    });
    // Once by the service, once by yt-dlp through the proxy.
    expect(source.requestsFor('/one/watch.html')).toHaveLength(2);
  });

  test('when a JW Player page sets up a playlist, then yt-dlp lists it through the proxy: its entries, their titles, the extractor', async () => {
    const url = source.content('/jw/playlist.html', jwPlaylist('A playlist', [clip, song, clip]));
    expect(await list(url)).toEqual({
      title: 'A playlist',
      extractor: 'Generic',
      truncated: false,
      entries: [
        { id: 'playlist', url: clip, title: 'Clip 1', durationSeconds: null, extractor: null, upcoming: false },
        { id: 'playlist', url: song, title: 'Clip 2', durationSeconds: null, extractor: null, upcoming: false },
      ],
    });
    expect(source.requestsFor('/jw/playlist.html')).toHaveLength(2);
  });

  test('when the JW Player playlist holds more than the limit, then yt-dlp lists one past it and the listing is truncated', async () => {
    const url = source.content('/jw/three.html', jwPlaylist('Three', [clip, song, hls]));
    expect(await list(url, { limit: 2 })).toMatchObject({ truncated: true, entries: [{ url: clip }, { url: song }] });
    expect(await list(url, { limit: 3 })).toMatchObject({ truncated: false, entries: [{ url: clip }, { url: song }, { url: hls }] });
  });

  test('when there is no yt-dlp, then the JW Player page has nothing the service can list: unsupported_source', async () => {
    const url = source.content('/jw/off.html', jwPlaylist('Off', [clip, song]));
    const error = await failure(list(url, { deps: { ...deps(), site: null } }));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toContain('installing yt-dlp');
  });

  test('when there is no yt-dlp and the page holds one video, then the page itself is the one entry', async () => {
    const url = source.content('/one/off.html', page('Alone', `<video src="${clip}"></video>`));
    expect(await list(url, { deps: { ...deps(), site: null } })).toEqual({
      title: 'Alone',
      extractor: 'page',
      truncated: false,
      entries: [{ id: null, url, title: 'Alone', durationSeconds: null, extractor: null, upcoming: false }],
    });
  });

  test("when yt-dlp's proxy refuses loopback addresses, then the playlist page is blocked_address: yt-dlp reached nothing but through it", async () => {
    const strict = await ExtractionProxy.start(new AddressPolicy(false));
    try {
      const url = source.content('/jw/confined.html', jwPlaylist('Confined', [clip, song]));
      const error = await failure(list(url, { deps: { ...deps(), site: { ...site, proxy: strict } } }));
      expect(error.code).toBe('blocked_address');
      // The service's own fetch only: yt-dlp's was refused at the proxy.
      expect(source.requestsFor('/jw/confined.html')).toHaveLength(1);
    } finally {
      await strict.close();
    }
  });

  test('when the listing is cancelled while yt-dlp runs, then it rejects with the cancel and yt-dlp is gone', async () => {
    const marker = randomBytes(6).toString('hex');
    source.route(`/hang-${marker}.html`, (_request, response, { count }) => {
      // The service's own look finds nothing; yt-dlp's request then never gets an answer.
      if (count === 1) response.writeHead(200, { 'content-type': 'text/html' }).end(page('Nothing', '<p>nothing</p>'));
    });
    const controller = new AbortController();
    const listing = list(source.url(`/hang-${marker}.html`), { signal: controller.signal });
    await untilRunning(marker);
    controller.abort(new Error('cancelled by the test'));
    await expect(listing).rejects.toThrow('cancelled by the test');
    for (let waited = 0; (await processesWith(marker)).length > 0 && waited < 5000; waited += 50) await sleep(50);
    expect(await processesWith(marker)).toEqual([]);
  });
});

describe("yt-dlp's flat playlist, as a stand-in prints it", () => {
  /** A stand-in yt-dlp that records its arguments beside `json`, which it prints. */
  async function standIn(json: unknown): Promise<{ deps: ListingDeps; args: () => Promise<string[]> }> {
    const base = path.join(work, `stand-in-${randomBytes(4).toString('hex')}`);
    await writeFile(`${base}.json`, JSON.stringify(json));
    await writeFile(base, `#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done > '${base}.args'\ncat '${base}.json'\n`, { mode: 0o755 });
    return {
      deps: { ...deps(), site: { ...site, ytdlp: { path: base, version: 'stand-in' } } },
      args: async () => (await readFile(`${base}.args`, 'utf8')).trim().split('\n'),
    };
  }

  test("when yt-dlp lists a playlist, then each entry's own http(s) URL is taken (url, else webpage_url, else original_url), extractors' internal forms and nested playlists skipped, ids, titles and durations cleaned, each entry's extractor and an upcoming live told", async () => {
    const url = source.content('/site/channel.html', page('A channel', '<p>no media of its own</p>'));
    const { deps: standInDeps, args } = await standIn({
      _type: 'playlist',
      extractor_key: 'YoutubeTab',
      title: 'Channel\u0007 uploads',
      playlist_count: 4,
      entries: [
        { _type: 'url', ie_key: 'Youtube', id: 'aaa', url: 'https://www.example.com/watch?v=aaa', title: 'First', duration: 61.5 },
        {
          _type: 'url',
          id: 'bbb',
          url: 'youtube:bbb',
          webpage_url: 'https://www.example.com/watch?v=bbb',
          title: 'Second\u202e',
          duration: -1,
          live_status: 'is_upcoming',
        },
        { _type: 'url', id: 12345, url: 'internal:12345', original_url: 'http://www.example.com/v/12345' },
        { _type: 'url', id: 'ccc', url: 'internal:ccc' },
        { _type: 'playlist', id: 'tab', url: 'https://www.example.com/channel/shorts' },
        { id: 'ddd', url: 'https://www.example.com/watch?v=aaa', title: 'The first again' },
        'not an entry',
        { id: 'eee', url: 'javascript:alert(1)', webpage_url: `https://www.example.com/${'x'.repeat(3000)}` },
      ],
    });
    expect(await list(url, { limit: 3, deps: standInDeps })).toEqual({
      title: 'Channel uploads',
      extractor: 'YoutubeTab',
      truncated: true,
      entries: [
        { id: 'aaa', url: 'https://www.example.com/watch?v=aaa', title: 'First', durationSeconds: 61.5, extractor: 'Youtube', upcoming: false },
        { id: 'bbb', url: 'https://www.example.com/watch?v=bbb', title: 'Second', durationSeconds: null, extractor: null, upcoming: true },
        { id: '12345', url: 'http://www.example.com/v/12345', title: null, durationSeconds: null, extractor: null, upcoming: false },
      ],
    });
    // One more than the limit, every extractor, flat, the URL after --.
    expect(await args()).toEqual([
      '--dump-single-json',
      '--flat-playlist',
      '--playlist-end',
      '4',
      '--ignore-config',
      '--no-cache-dir',
      '--no-download',
      '--',
      url,
    ]);
  });

  test('when yt-dlp lists a playlist of which no entry has a web address, then it is unsupported_source', async () => {
    const url = source.content('/site/internal.html', page('Internal', '<p>nothing</p>'));
    const { deps: standInDeps } = await standIn({ _type: 'playlist', extractor_key: 'Odd', entries: [{ _type: 'url', url: 'odd:1' }] });
    const error = await failure(list(url, { deps: standInDeps }));
    expect(error.code).toBe('unsupported_source');
    expect(error.message).toBe(`yt-dlp found a playlist at ${url}, but no entry of it has a web address.`);
  });

  test("when yt-dlp's answer is no description at all, then it is unsupported_source", async () => {
    const url = source.content('/site/garbage.html', page('Garbage', '<p>nothing</p>'));
    const { deps: standInDeps } = await standIn(['not', 'a', 'playlist']);
    expect((await failure(list(url, { deps: standInDeps }))).code).toBe('unsupported_source');
  });
});

describe('one file or stream', () => {
  test('when the URL is an MP4, then it is the one entry (direct); an HLS playlist, the one entry (hls)', async () => {
    expect(await list(clip)).toEqual({
      title: null,
      extractor: 'direct',
      truncated: false,
      entries: [{ id: null, url: clip, title: null, durationSeconds: null, extractor: null, upcoming: false }],
    });
    expect(await list(hls)).toEqual({
      title: null,
      extractor: 'hls',
      truncated: false,
      entries: [{ id: null, url: hls, title: null, durationSeconds: null, extractor: null, upcoming: false }],
    });
  });

  test('when the URL answers 404, then it is source_http_error, and yt-dlp is not asked', async () => {
    const url = source.status('/gone.html', 404);
    const error = await failure(list(url));
    expect(error).toMatchObject({ code: 'source_http_error', retryable: false });
    expect(source.requestsFor('/gone.html')).toHaveLength(1);
  });
});

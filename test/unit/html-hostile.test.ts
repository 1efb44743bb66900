import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { PageMedia } from '../../src/sources/html/page-media.ts';
import { filled, PAGE_BYTES } from '../support/html-pages.ts';

// Every byte of a page is an attacker's, up to the 8 MiB the service reads. Pages written to make
// the media finder take quadratic time or recurse as deep as they nest: each must be read in well
// under a second (the budget leaves room for a loaded two-core machine), find what an honest
// reader would, and never overflow the stack. Before the finder was made linear, 300 KB of
// slashes took 22 s or more, and 100 000 nested elements about 18 s.

const PAGE_URL = 'https://site.example/watch/1.html';
const BUDGET_MS = 2_000;
/** A finder gone quadratic would take hours on these pages; past this its test fails instead of hanging the run. */
const DEADLINE_MS = 20_000;
const DEEP = 100_000;

const jsonLd = (json: string) => `<script type="application/ld+json">${json}</script>`;
const VIDEO_OBJECT = JSON.stringify({ '@type': 'VideoObject', contentUrl: '/deep.mp4' });
const DEEP_MP4 = 'https://site.example/deep.mp4';

/**
 * findMediaInPage in a thread of its own that times it, with the heap the service's document
 * reader gives its threads: a page that made it hang can be given up on, one that made it swell fails.
 */
function startFinder(): Worker {
  const finder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    import('tsx/esm/api')
      .then(({ register }) => (register(), import(workerData.module)))
      .then(({ findMediaInPage }) => parentPort.on('message', (html) => {
        const started = performance.now();
        const found = findMediaInPage({ html, pageUrl: workerData.pageUrl });
        parentPort.postMessage({ found, ms: performance.now() - started });
      }));`,
    {
      eval: true,
      workerData: { module: new URL('../../src/sources/html/page-media.ts', import.meta.url).href, pageUrl: PAGE_URL },
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 32 },
    },
  );
  return finder;
}

let finder: Worker;

beforeAll(() => {
  finder = startFinder();
});

afterAll(async () => {
  await finder?.terminate();
});

async function findTimed(html: string): Promise<PageMedia> {
  finder.postMessage(html);
  let reply: { found: PageMedia; ms: number };
  try {
    [reply] = (await once(finder, 'message', { signal: AbortSignal.timeout(DEADLINE_MS) })) as [typeof reply];
  } catch (error) {
    // A thread that hung or died is replaced for the next test.
    await finder.terminate();
    finder = startFinder();
    throw (error as Error).name === 'AbortError' ? new Error(`findMediaInPage did not answer within ${DEADLINE_MS} ms`) : error;
  }
  expect(reply.ms).toBeLessThan(BUDGET_MS);
  return reply.found;
}

describe('findMediaInPage on pages written to be slow', () => {
  test('when a page is 8 MiB of slashes, then it is read within the budget and offers nothing', async () => {
    expect(await findTimed(filled('/'))).toEqual({ candidates: [], title: null, subtitles: [] });
  });

  test('when a page is 8 MiB of "//a.m3u8" over and over, then the one URL they spell is found within the budget', async () => {
    const html = filled('//a.m3u8');
    expect((await findTimed(html)).candidates).toEqual([`https:${html}`]);
  });

  test('when a page is 8 MiB of "http://" over and over, then it is read within the budget and offers nothing', async () => {
    expect((await findTimed(filled('http://'))).candidates).toEqual([]);
  });

  test('when a page is 8 MiB of quotes and slashes, then it is read within the budget and offers nothing', async () => {
    expect((await findTimed(filled('"/'))).candidates).toEqual([]);
    expect((await findTimed(filled('"/"//'))).candidates).toEqual([]);
  });

  test('when a page repeats one quoted playlist path to 8 MiB, then it comes back once, within the budget', async () => {
    expect((await findTimed(filled('"/a.m3u8" '))).candidates).toEqual(['https://site.example/a.m3u8']);
  });

  test('when a page names 300 000 distinct playlists, then the first 100 come back in order, within the budget', async () => {
    const html = Array.from({ length: 300_000 }, (_unused, index) => `//cdn.example/${index}.m3u8`).join(' ');
    const { candidates } = await findTimed(html);
    expect(candidates).toHaveLength(100);
    expect(candidates.slice(0, 2)).toEqual(['https://cdn.example/0.m3u8', 'https://cdn.example/1.m3u8']);
    expect(candidates.at(-1)).toBe('https://cdn.example/99.m3u8');
  });
});

describe('findMediaInPage on pages nested to be slow or to overflow the stack', () => {
  test('when a <source> sits 100 000 elements deep in a <video>, then it is found within the budget and one after the video is not', async () => {
    const html = `<video>${'<div>'.repeat(DEEP)}<source src="/deep.mp4">${'</div>'.repeat(DEEP)}</video><source src="/outside.mp4">`;
    expect((await findTimed(html)).candidates).toEqual([DEEP_MP4]);
  });

  test('when a video sits inside 8 MiB of unclosed <b>, then it is found within the budget', async () => {
    const video = '<video src="/deep.mp4"></video>';
    expect((await findTimed(filled('<b>', PAGE_BYTES - video.length) + video)).candidates).toEqual([DEEP_MP4]);
  });

  test('when 8 MiB of end tags of elements never opened follow 10 000 open ones, then the video after them is found within the budget', async () => {
    const video = '<video src="/deep.mp4"></video>';
    const open = '<b>'.repeat(10_000);
    expect((await findTimed(open + filled('</i>', PAGE_BYTES - open.length - video.length) + video)).candidates).toEqual([DEEP_MP4]);
  });

  test('when a <title> sits in 100 000 nested <svg>, then it names an icon and the page <title> after them is the title', async () => {
    const html = `${'<svg>'.repeat(DEEP)}<title>Icon</title>${'</svg>'.repeat(DEEP)}<title>Page</title>`;
    expect((await findTimed(html)).title).toBe('Page');
  });

  test('when the page <title> sits 100 000 elements deep, then it is the title, found within the budget', async () => {
    expect((await findTimed(`${'<div><span>'.repeat(DEEP)}<title>Deep &amp; down</title>`)).title).toBe('Deep & down');
  });

  test('when a JSON-LD block nests arrays a million deep around a VideoObject, then its contentUrl is found without overflowing the stack', async () => {
    const html = jsonLd(`${'['.repeat(1_000_000)}${VIDEO_OBJECT}${']'.repeat(1_000_000)}`);
    expect((await findTimed(html)).candidates).toEqual([DEEP_MP4]);
  });

  test('when a JSON-LD block nests objects a million deep around a VideoObject, then its contentUrl is found without overflowing the stack', async () => {
    const html = jsonLd(`${'{"a":'.repeat(1_000_000)}${VIDEO_OBJECT}${'}'.repeat(1_000_000)}`);
    expect((await findTimed(html)).candidates).toEqual([DEEP_MP4]);
  });

  test('when a VideoObject lists 300 000 contentUrls, then they are taken without overflowing the stack', async () => {
    const urls = Array.from({ length: 300_000 }, (_unused, index) => `/v${index}.mp4`);
    const { candidates } = await findTimed(jsonLd(JSON.stringify({ '@type': 'VideoObject', contentUrl: urls })));
    expect(candidates).toHaveLength(100);
    expect(candidates[0]).toBe('https://site.example/v0.mp4');
  });

  test('when 100 000 JSON-LD scripts nest inside an <svg>, then the outermost block is read once, within the budget', async () => {
    const html = `<svg>${'<script type="application/ld+json">'.repeat(DEEP)}${VIDEO_OBJECT}`;
    expect((await findTimed(html)).candidates).toEqual([DEEP_MP4]);
  });
});

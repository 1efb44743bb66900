import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestService, type TestService } from './support/api.ts';
import { startPythonServer, type PythonServer } from './support/python-server.ts';
import {
  bytesAskedTwice,
  downloadAtOnce,
  downloadEverySize,
  downloaderOf,
  downloadOneAfterAnother,
  expectSameFrames,
  expectWhole,
  forget,
  linkInto,
  nextDownload,
  STREAMS,
  streamCases,
  under,
  type Downloader,
  type Fetched,
  type StreamCase,
  type StreamName,
} from './support/real-servers.ts';
import { SIZES, sizedMedia, type SizedMediaName } from './support/sized-media.ts';

// Python's http.server, as the README's walk-through serves a file: HTTP/1.0, one response per
// connection, Content-Length but no ETag, no Range. A well-behaved server, so every download from
// it must complete on its first attempt, and no file or segment may be asked for twice.

let app: TestService;
let service: Downloader;
let python: PythonServer;
let root: string;
let media: Record<SizedMediaName, string>;
let streams: Record<StreamName, StreamCase>;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vds-python-root-'));
  // The README's settings, but one attempt: a download that would have needed a retry fails with
  // the reason its first attempt had, instead of hiding it behind a later success.
  [app, media, streams] = await Promise.all([startTestService({ maxAttempts: 1 }), sizedMedia(), streamCases(root)]);
  service = downloaderOf(app);
  // The README's folder: /tmp/media with clip.mp4 in it.
  await copyFile(media['readme-clip.mp4'], path.join(root, 'clip.mp4'));
  await mkdir(path.join(root, 'media'));
  await Promise.all(SIZES.map((name) => symlink(media[name], path.join(root, 'media', name))));
  python = await startPythonServer(root);
}, 120_000);

afterAll(async () => {
  await python?.stop();
  await app?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

/** The requests python logged for `target`, as "METHOD status". */
function askedFor(target: string): string[] {
  return python
    .requests()
    .filter((request) => request.target === target)
    .map((request) => `${request.method} ${request.status}`);
}

describe("the README's walk-through", () => {
  const readme = (done: Fetched['done'], i: number): Fetched => ({ label: `#${i + 1}`, target: '/clip.mp4', source: media['readme-clip.mp4'], done });

  test('when the README clip is downloaded from python -m http.server 25 times one after the other, then each completes on its first attempt, byte for byte, asking python once', async () => {
    const asked: number[] = [];
    const fetched: Fetched[] = [];
    for (let run = 0; run < 25; run++) {
      const before = askedFor('/clip.mp4').length;
      const [done] = await downloadOneAfterAnother(service, [`${python.url}/clip.mp4`]);
      fetched.push(readme(done!, run));
      asked.push(askedFor('/clip.mp4').length - before);
    }
    await expectWhole(service, fetched);
    for (const { done } of fetched) expect(done.file).toMatchObject({ filename: 'clip.mp4', content_type: 'video/mp4', width: 640, height: 360 });
    expect(asked).toEqual(fetched.map(() => 1));
    await forget(service, fetched);
  }, 120_000);

  test('when the README clip is downloaded from python -m http.server 25 times at once, then each completes on its first attempt, byte for byte, asking python once', async () => {
    const before = askedFor('/clip.mp4');
    const done = await downloadAtOnce(
      service,
      Array.from({ length: 25 }, () => `${python.url}/clip.mp4`),
    );
    const fetched = done.map(readme);
    await expectWhole(service, fetched);
    expect(askedFor('/clip.mp4').slice(before.length)).toEqual(done.map(() => 'GET 200'));
    await forget(service, fetched);
  }, 120_000);
});

test(`when python -m http.server serves ${SIZES.join(', ')}, each alone and then 4 of each at once, then every download completes on its first attempt, byte for byte, with one GET each`, async () => {
  const fetched = await downloadEverySize(service, python.url, media, (size, n) => `/media/${size}?download=${n}`);
  await expectWhole(service, fetched);
  expect(fetched.map((one) => ({ download: one.label, asked: askedFor(one.target) }))).toEqual(
    fetched.map((one) => ({ download: one.label, asked: ['GET 200'] })),
  );
  await forget(service, fetched);
}, 120_000);

const kinds = ['hls-ts', 'hls-fmp4', 'hls-master', 'dash-number', 'dash-time', 'dash-list'] as const satisfies readonly StreamName[];

test(`when python -m http.server serves ${kinds.map((kind) => STREAMS[kind]).join(', ')}, all at once, then every download completes on its first attempt with the source's frames, asking for every file once`, async () => {
  // A folder of its own for each download (a link to the fixture), so that its requests can be told from the others'.
  const planned = await Promise.all(
    kinds.map(async (kind) => ({ kind, prefix: await linkInto(root, `/streams/${kind}-${nextDownload()}`, streams[kind].dir) })),
  );
  const done = await downloadAtOnce(
    service,
    planned.map(({ kind, prefix }) => `${python.url}${prefix}/${streams[kind].entry}`),
  );
  const fetched = planned.map(({ kind, prefix }, i) => ({ label: kind, target: prefix, source: streams[kind].reference, done: done[i]! }));
  await expectSameFrames(service, fetched);
  const logged = planned.map(({ kind, prefix }) => {
    const requests = under(python.requests(), prefix);
    return {
      download: kind,
      entry: requests.filter((request) => request.path === `${prefix}/${streams[kind].entry}`).length,
      failed: requests.filter((request) => request.status !== 200).map((request) => `${request.target} ${request.status}`),
      twice: bytesAskedTwice(requests),
    };
  });
  expect(logged).toEqual(planned.map(({ kind }) => ({ download: kind, entry: 1, failed: [], twice: [] })));
  await forget(service, fetched);
}, 120_000);

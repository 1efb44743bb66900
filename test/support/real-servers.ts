import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { pollStatus, type Download, type TestHttp, type TestService } from './api.ts';
import { frameHashes } from './ffmpeg.ts';
import { sha256File } from './media.ts';
import { SIZES, type SizedMediaName } from './sized-media.ts';
import { dashFixtures, type DashFixture } from './streams/dash-fixtures.ts';
import { prepareHlsFixtures } from './streams/hls-fixtures.ts';

// What every real-server test checks, whatever the server: each download completes on its first
// attempt with the source's exact bytes (or, for a stream, its exact frames), and the server was
// asked for no byte twice.

/** A request as a server's own log has it. */
export type ServedRequest = {
  method: string;
  /** The request target as sent: percent-encoded, with its query string. */
  target: string;
  /** The target's path, percent-decoded, without the query string. */
  path: string;
  status: number;
  /** The Range header, when the log records it (nginx's does, python's does not). */
  range?: string;
};

const DOWNLOAD_TIMEOUT_MS = 90_000;

/** A service to download through: its client, and the data dir where it keeps finished files. */
export type Downloader = { http: TestHttp; dataDir: string };

export const downloaderOf = (app: TestService): Downloader => ({ http: app.http, dataDir: app.config.dataDir });

let counter = 0;

/** A number no other download of this test file has had: part of a URL, it tells that download's requests from the others'. */
export function nextDownload(): number {
  return ++counter;
}

/** Creates a download of each URL, all before waiting for any; the ids in the same order. */
export async function createAll(service: Downloader, urls: readonly string[], extra: Record<string, unknown> = {}): Promise<string[]> {
  const created = await Promise.all(urls.map((url) => service.http.createDownload({ url, ...extra })));
  for (const res of created) expect(res.status).toBe(202);
  return created.map((res) => (res.body as Download).id);
}

/** Waits for every download to complete or fail; the final states in the same order. */
export function finalStates(service: Downloader, ids: readonly string[]): Promise<Download[]> {
  return Promise.all(ids.map((id) => pollStatus(service.http, id, ['completed', 'failed'], DOWNLOAD_TIMEOUT_MS)));
}

/** Downloads each URL, waiting for each to end before the next is asked for. */
export async function downloadOneAfterAnother(service: Downloader, urls: readonly string[], extra: Record<string, unknown> = {}): Promise<Download[]> {
  const done: Download[] = [];
  for (const url of urls) done.push(...(await finalStates(service, await createAll(service, [url], extra))));
  return done;
}

/** Downloads every URL at once. */
export async function downloadAtOnce(service: Downloader, urls: readonly string[], extra: Record<string, unknown> = {}): Promise<Download[]> {
  return finalStates(service, await createAll(service, urls, extra));
}

/** A finished download, with what it was: a name for messages, the request target it asked for, and the file it must be. */
export type Fetched = { label: string; target: string; source: string; done: Download };

/**
 * Downloads every size (SIZES unless told) from `origin`: each alone, one after another, then
 * `atOnce` of each, all at once. `target` gives the request target of download `n` of a size.
 */
export async function downloadEverySize(
  service: Downloader,
  origin: string,
  media: Record<SizedMediaName, string>,
  target: (size: SizedMediaName, n: number) => string,
  sizes: readonly SizedMediaName[] = SIZES,
  atOnce = 4,
): Promise<Fetched[]> {
  const fetched: Fetched[] = [];
  for (const size of sizes) {
    const one = target(size, nextDownload());
    const [done] = await downloadOneAfterAnother(service, [origin + one]);
    fetched.push({ label: `${size} alone`, target: one, source: media[size], done: done! });
  }
  const together = sizes.flatMap((size) =>
    Array.from({ length: atOnce }, (_, i) => ({ size, label: `${size} at once #${i + 1}`, target: target(size, nextDownload()) })),
  );
  const done = await downloadAtOnce(
    service,
    together.map((one) => origin + one.target),
  );
  return [...fetched, ...together.map((one, i) => ({ label: one.label, target: one.target, source: media[one.size], done: done[i]! }))];
}

/** How a download ended, in the few words a failing assertion should show first. */
export function outcome(done: Download): { status: string; attempts: number; error: string | null } {
  return { status: done.status, attempts: done.attempts, error: done.error ? `${done.error.code}: ${done.error.message}` : null };
}

const sha256s = new Map<string, Promise<string>>();
const cachedSha256 = (file: string) => {
  if (!sha256s.has(file)) sha256s.set(file, sha256File(file));
  return sha256s.get(file)!;
};

/**
 * Every download completed in `attempts` (1 unless told otherwise), and its file is its source
 * byte for byte: the stored file of each (hashed where the service keeps it), and the first of
 * each source also as its download_url serves it. The outcomes are compared as one list first,
 * so that a failure shows how every download ended, not only the first that went wrong.
 */
export async function expectWhole(service: Downloader, fetched: readonly Fetched[], attempts: (one: Fetched) => number = () => 1): Promise<void> {
  expect(fetched.map((one) => ({ download: one.label, ...outcome(one.done) }))).toEqual(
    fetched.map((one) => ({ download: one.label, status: 'completed', attempts: attempts(one), error: null })),
  );
  const served = new Set<string>();
  for (const one of fetched) {
    const [sha256, { size }] = await Promise.all([cachedSha256(one.source), stat(one.source)]);
    expect({ download: one.label, ...one.done.file }).toMatchObject({ download: one.label, size_bytes: size, sha256 });
    expect({ download: one.label, stored: await sha256File(path.join(service.dataDir, 'files', one.done.id)) }).toEqual({
      download: one.label,
      stored: sha256,
    });
    if (served.has(one.source)) continue;
    served.add(one.source);
    const res = await service.http.getFile(one.done.download_url!);
    expect(res.status).toBe(200);
    expect(createHash('sha256').update(res.body).digest('hex')).toBe(sha256);
  }
}

const referenceFrames = new Map<string, Promise<string[]>>();

/** Every download completed on its first attempt, and its file decodes to exactly its source's (`reference`'s) video frames. */
export async function expectSameFrames(service: Downloader, fetched: readonly Fetched[]): Promise<void> {
  expect(fetched.map((one) => ({ download: one.label, ...outcome(one.done) }))).toEqual(
    fetched.map((one) => ({ download: one.label, status: 'completed', attempts: 1, error: null })),
  );
  for (const one of fetched) {
    if (!referenceFrames.has(one.source)) referenceFrames.set(one.source, frameHashes(one.source));
    const expected = await referenceFrames.get(one.source)!;
    expect(expected.length).toBeGreaterThan(0);
    const res = await service.http.getFile(one.done.download_url!);
    expect(res.status).toBe(200);
    expect({ download: one.label, frames: await frameHashesOf(res.body, one.done.file!.filename) }).toEqual({ download: one.label, frames: expected });
  }
}

/** Removes completed downloads' files, so that tens of MB per download do not pile up in the data dir. */
export async function forget(service: Downloader, fetched: readonly Fetched[]): Promise<void> {
  await Promise.all(fetched.map(({ done }) => service.http.request('DELETE', `/downloads/${done.id}`, '/downloads/{download_uuid}')));
}

async function frameHashesOf(bytes: Buffer, name: string): Promise<string[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-frames-'));
  try {
    const file = path.join(dir, `file${path.extname(name)}`);
    await writeFile(file, bytes);
    return await frameHashes(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The segments a media playlist lists, after its init section, joined in order: the stream as one file's bytes. */
export async function joinedPlaylist(dir: string, playlist: string, init?: string): Promise<Buffer> {
  const text = await readFile(path.join(dir, playlist), 'utf8');
  const uris = [...new Set(text.split('\n').filter((line) => line.trim() && !line.startsWith('#')))];
  return Buffer.concat(await Promise.all([...(init ? [init] : []), ...uris].map((uri) => readFile(path.join(dir, path.dirname(playlist), uri)))));
}

type Span = { from: number; to: number; header: string };

function spanOf(request: ServedRequest): Span | null {
  if (!request.range) return { from: 0, to: Infinity, header: '(whole file)' };
  const match = /^bytes=(\d+)-(\d*)$/.exec(request.range.trim());
  if (!match) return null;
  return { from: Number(match[1]), to: match[2] ? Number(match[2]) : Infinity, header: request.range };
}

/**
 * What was asked for twice: per path, every pair of requests whose bytes overlap (a request with
 * no Range asks for the whole file), less the hedge's own second requests. Empty when no byte of
 * any file was asked for twice.
 */
export function bytesAskedTwice(requests: readonly ServedRequest[]): string[] {
  const byPath = new Map<string, ServedRequest[]>();
  for (const request of requests) byPath.set(request.target, [...(byPath.get(request.target) ?? []), request]);
  const problems: string[] = [];
  const hedges: string[] = [];
  for (const [target, asked] of byPath) {
    const spans = asked.map(spanOf);
    for (let i = 0; i < spans.length; i++) {
      const a = spans[i];
      if (!a) {
        problems.push(`${target}: a Range of ${asked[i]!.range} (not one byte range)`);
        continue;
      }
      for (let j = i + 1; j < spans.length; j++) {
        const b = spans[j];
        if (!b || a.from > b.to || b.from > a.to) continue;
        const repeat = `${target}: ${a.header} (${asked[i]!.status}) and again ${b.header} (${asked[j]!.status})`;
        const sameSegment = a.from === b.from && a.to === b.to && !/\.(m3u8|mpd)$/i.test(asked[i]!.path);
        (sameSegment ? hedges : problems).push(repeat);
      }
    }
  }
  // A segment far slower than its siblings is asked for a second time on purpose (the hedge in
  // src/sources/segmented/hedge.ts), at most HEDGE_BUDGET times in a download of these sizes; a
  // loaded machine can make a segment that slow. Any other repeat, or more than that, is a fault.
  return hedges.length > HEDGE_BUDGET ? [...problems, ...hedges] : problems;
}

/** The hedge's budget for a stream of fewer than 40 pieces (hedge.ts: at least 2, else 5% of them). */
const HEDGE_BUDGET = 2;

/** The requests whose path is `prefix` or lies below it. */
export function under<T extends ServedRequest>(requests: readonly T[], prefix: string): T[] {
  return requests.filter((request) => request.path === prefix || request.path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`));
}

/** A stream a real server serves from a folder: what to ask for first, and the frames that must come out. */
export type StreamCase = { dir: string; entry: string; reference: string };

/** Each stream, as a test's name tells it. */
export const STREAMS = {
  'hls-ts': 'an MPEG-TS HLS playlist',
  'hls-fmp4': 'an fMP4 HLS playlist with EXT-X-MAP',
  'hls-master': 'an HLS master playlist',
  'hls-single-file': 'an HLS playlist of EXT-X-BYTERANGEs of one file',
  'dash-number': 'a DASH SegmentTemplate $Number$ manifest',
  'dash-time': 'a DASH SegmentTimeline $Time$ manifest',
  'dash-list': 'a DASH SegmentList manifest',
  'dash-list-ranges': 'a DASH SegmentList of mediaRanges of one file',
  'dash-base': 'a DASH SegmentBase manifest (sidx and init ranges)',
} as const;

export type StreamName = keyof typeof STREAMS;

/** `test.each` rows for `names`: the title (for %s) and the name. */
export function streamRows(names: readonly StreamName[]): Array<[string, StreamName]> {
  return names.map((name) => [STREAMS[name], name]);
}

/** The HLS and DASH fixtures as real servers serve them; reference files for HLS are written into `scratch`. */
export async function streamCases(scratch: string): Promise<Record<StreamName, StreamCase>> {
  const [hls, dash] = await Promise.all([prepareHlsFixtures(), dashFixtures()]);
  const joined = async (name: string, bytes: Promise<Buffer>) => {
    const file = path.join(scratch, `${name}.reference`);
    await writeFile(file, await bytes);
    return file;
  };
  const fromDash = (fixture: DashFixture): StreamCase => ({ dir: fixture.dir, entry: 'manifest.mpd', reference: fixture.videoSources[240]! });
  return {
    'hls-ts': { dir: hls.ts.dir, entry: hls.ts.playlist, reference: await joined('ts', joinedPlaylist(hls.ts.dir, hls.ts.playlist)) },
    'hls-fmp4': {
      dir: hls.fmp4.dir,
      entry: hls.fmp4.playlist,
      reference: await joined('fmp4', joinedPlaylist(hls.fmp4.dir, hls.fmp4.playlist, 'init.mp4')),
    },
    'hls-master': {
      dir: hls.master.dir,
      entry: hls.master.playlist,
      reference: await joined('master', joinedPlaylist(hls.master.dir, 'v720/index.m3u8')),
    },
    'hls-single-file': {
      dir: hls['single-file'].dir,
      entry: hls['single-file'].playlist,
      reference: path.join(hls['single-file'].dir, 'media.ts'),
    },
    'dash-number': fromDash(dash.number),
    'dash-time': fromDash(dash.time),
    'dash-list': fromDash(dash.list),
    'dash-list-ranges': fromDash(dash['list-ranges']),
    'dash-base': fromDash(dash.base),
  };
}

/** Links `dir` into `root` at `prefix`: a folder of its own for each download, so that its requests can be told from the others'. */
export async function linkInto(root: string, prefix: string, dir: string): Promise<string> {
  await mkdir(path.dirname(path.join(root, prefix)), { recursive: true });
  await symlink(dir, path.join(root, prefix));
  return prefix;
}

/** Copies `dir` into `root` at `prefix`, each playlist, manifest and page with a gzip-compressed copy beside it, as `gzip -k` leaves them for gzip_static. */
export async function copyWithGzip(root: string, prefix: string, dir: string): Promise<string> {
  const target = path.join(root, prefix);
  await cp(dir, target, { recursive: true, dereference: true });
  for (const relative of await readdir(target, { recursive: true })) {
    if (!/\.(m3u8|mpd|html)$/.test(relative)) continue;
    const file = path.join(target, relative);
    await writeFile(`${file}.gz`, gzipSync(await readFile(file), { level: 9 }));
  }
  return prefix;
}

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { MIN_PIECE_BYTES } from '../src/sources/direct/pieces.ts';
import { startTestService, type TestService } from './support/api.ts';
import { startNginx, type Nginx, type NginxRequest } from './support/nginx.ts';
import {
  bytesAskedTwice,
  copyWithGzip,
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
  type StreamCase,
  type StreamName,
} from './support/real-servers.ts';
import { SIZES, sizedMedia, type SizedMediaName } from './support/sized-media.ts';

// Debian's nginx as people run it, one small configuration each: keep-alive on and off, no ranges,
// gzip (on the fly and pre-compressed), redirects, downloads named by Content-Disposition, wrong
// types, a rate limit, HEAD refused, names beyond ASCII. Every one is a well-behaved server: each
// download from it must complete on its first attempt, and its access log must show that no byte
// of a file or segment was asked for twice.

const NON_ASCII = 'vidéo ñ 日本';

const servers = {
  'keep-alive (the default)': '',
  'keepalive_timeout 0': 'keepalive_timeout 0;',
  'max_ranges 0': 'max_ranges 0;',
  // Debian's mime.types has no .mpd: whoever compresses manifests names their type too.
  'gzip on': [
    'gzip on; gzip_min_length 1; gzip_vary on; gzip_proxied any;',
    'gzip_types application/vnd.apple.mpegurl application/dash+xml text/plain;',
    'types { application/dash+xml mpd; }',
  ].join('\n'),
  'gzip_static always': 'gzip_static always;',
  'a chain of 3 redirects': [
    'location ~ ^/hop1(/.*)$ { return 302 /hop2$1$is_args$args; }',
    'location ~ ^/hop2(/.*)$ { return 302 /hop3$1$is_args$args; }',
    'location ~ ^/hop3(/.*)$ { return 302 $1$is_args$args; }',
  ].join('\n'),
  'application/octet-stream and Content-Disposition': `
    location ~ ^/get/(?<id>[a-z0-9-]+)$ {
      types { }
      default_type application/octet-stream;
      add_header Content-Disposition 'attachment; filename="Holiday $id.mp4"';
      try_files /opaque/$id =404;
    }`,
  'playlists and manifests as text/plain': 'location ~ \\.(m3u8|mpd)$ { types { } default_type text/plain; }',
  // The large file gets more, to keep the run short; the small ones arrive in paced bursts.
  'limit_rate 2m': 'limit_rate 2m; location = /media/large.mp4 { limit_rate 10m; }',
  'HEAD refused with 405': 'if ($request_method = HEAD) { return 405; }',
} as const;

type ServerName = keyof typeof servers;

let app: TestService;
let service: Downloader;
let root: string;
let media: Record<SizedMediaName, string>;
let streams: Record<StreamName, StreamCase>;
const nginx = {} as Record<ServerName, Nginx>;
const nginxDirs: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vds-nginx-root-'));
  // One attempt: a download that would have needed a retry fails with the reason its first attempt
  // had, instead of hiding it behind a later success. Enough workers that the downloads a test
  // starts at once run at once.
  [app, media, streams] = await Promise.all([startTestService({ maxAttempts: 1, workerConcurrency: 16 }), sizedMedia(), streamCases(root)]);
  service = downloaderOf(app);
  await Promise.all(['media', 'opaque', 'intl', 'streams', 'pages'].map((dir) => mkdir(path.join(root, dir))));
  for (const size of SIZES) {
    await symlink(media[size], path.join(root, 'media', size));
    await symlink(media[size], path.join(root, 'opaque', path.basename(size, '.mp4')));
    await symlink(media[size], path.join(root, 'intl', `${NON_ASCII} ${size}`));
  }
  for (const [name, extra] of Object.entries(servers) as Array<[ServerName, string]>) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-nginx-'));
    nginxDirs.push(dir);
    nginx[name] = await startNginx(dir, `root ${root};\ninclude /etc/nginx/mime.types;\n${extra}`, { log: true });
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(Object.values(nginx).map((server) => server.stop()));
  await app?.stop();
  await Promise.all([root, ...nginxDirs].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The access log once nginx has written every request it has finished (one it noticed cut off may be logged a moment later). */
async function settledLog(server: Nginx): Promise<NginxRequest[]> {
  let last = await server.requests();
  for (;;) {
    await sleep(150);
    const now = await server.requests();
    if (now.length === last.length) return now;
    last = now;
  }
}

/** What nginx logged for `target`, as what each request asked for and got. */
function loggedFor(requests: readonly NginxRequest[], target: string) {
  return requests.filter((request) => request.target === target).map(({ method, status, range, bodyBytes }) => ({ method, status, range, bodyBytes }));
}

/**
 * What the GETs after the first asked for: nothing, or 206s of ranges (a piece whose second half
 * another connection took is let go at the half), with no more sent in all than half the file
 * again (what was on its way when a connection was let go).
 */
function restAsked(first: ReturnType<typeof loggedFor>[number] | undefined, ranges: ReturnType<typeof loggedFor>, size: number): string {
  if (ranges.length === 0) return 'nothing';
  if (ranges.some(({ status, range }) => status !== 206 || !/^bytes=\d+-\d+$/.test(range ?? ''))) return `not only ranges: ${JSON.stringify(ranges)}`;
  const sent = [first, ...ranges].reduce((sum, request) => sum + (request?.bodyBytes ?? 0), 0);
  return sent <= 1.5 * size ? 'ranges of the rest of the file' : `${sent} bytes sent for a file of ${size}`;
}

type DirectCase = {
  server: ServerName;
  /** The request target of download `n` of `size`. */
  target: (size: SizedMediaName, n: number) => string;
  /** The redirects that lead to it, each asked for once. */
  hops?: (target: string) => string[];
  /** The file name the download must get. */
  filename?: (size: SizedMediaName) => string;
};

const plain = (server: ServerName): DirectCase => ({ server, target: (size, n) => `/media/${size}?download=${n}` });

const directCases: Array<[string, DirectCase]> = [
  ['with keep-alive (the default)', plain('keep-alive (the default)')],
  ['with keepalive_timeout 0', plain('keepalive_timeout 0')],
  ['with max_ranges 0', plain('max_ranges 0')],
  ['with gzip on', plain('gzip on')],
  ['with limit_rate 2m', plain('limit_rate 2m')],
  ['refusing HEAD with 405', plain('HEAD refused with 405')],
  [
    'behind a chain of 3 redirects (302)',
    {
      server: 'a chain of 3 redirects',
      target: (size, n) => `/media/${size}?download=${n}`,
      hops: (target) => ['/hop1', '/hop2', '/hop3'].map((hop) => hop + target),
    },
  ],
  [
    'as application/octet-stream with Content-Disposition: attachment; filename="Holiday …"',
    {
      server: 'application/octet-stream and Content-Disposition',
      target: (size, n) => `/get/${path.basename(size, '.mp4')}?download=${n}`,
      filename: (size) => `Holiday ${path.basename(size, '.mp4')}.mp4`,
    },
  ],
  [
    `at percent-encoded non-ASCII paths (${NON_ASCII} …)`,
    {
      server: 'keep-alive (the default)',
      target: (size, n) => `/intl/${encodeURIComponent(`${NON_ASCII} ${size}`)}?download=${n}`,
      filename: (size) => `${NON_ASCII} ${size}`,
    },
  ],
];

test.each(directCases)(
  `when nginx %s serves ${SIZES.join(', ')}, each alone and then 2 of each at once, then every download completes on its first attempt, byte for byte, with one GET each, or one and then ranges of the rest for a file worth splitting`,
  async (_how, { server, target, hops, filename }) => {
    const origin = nginx[server].url;
    // Behind redirects, what is asked for first is the first hop.
    const fetched = await downloadEverySize(service, hops ? `${origin}/hop1` : origin, media, target, SIZES, 2);
    await expectWhole(service, fetched);
    if (filename) {
      expect(fetched.map((one) => ({ download: one.label, filename: one.done.file?.filename }))).toEqual(
        fetched.map((one) => ({ download: one.label, filename: filename(path.basename(one.source) as SizedMediaName) })),
      );
    }

    const requests = (await settledLog(nginx[server])).filter((request) => request.method === 'GET');
    const asked = (one: (typeof fetched)[number]) => {
      // nginx logs a request as it ends: the first, let go where its piece ended, may end last.
      const logged = loggedFor(requests, one.target);
      const first = logged.find((request) => request.range === undefined) ?? logged[0];
      const ranges = logged.filter((request) => request !== first);
      return { first: first && { ...first, bodyBytes: undefined }, rest: restAsked(first, ranges, one.done.file!.size_bytes) };
    };
    // A file over two pieces' worth may be shared out over more connections when the first is slow
    // (a loaded machine, a rate limit): the first GET is let go where its piece ends.
    const expected = (one: (typeof fetched)[number]) => ({
      first: { method: 'GET', status: 200, range: undefined, bodyBytes: undefined },
      rest: one.done.file!.size_bytes > 2 * MIN_PIECE_BYTES && asked(one).rest !== 'nothing' ? 'ranges of the rest of the file' : 'nothing',
    });
    expect(fetched.map((one) => ({ download: one.label, asked: asked(one) }))).toEqual(fetched.map((one) => ({ download: one.label, asked: expected(one) })));
    if (hops) {
      expect(
        fetched.map((one) => ({ download: one.label, hops: hops(one.target).map((hop) => loggedFor(requests, hop).map((request) => request.status)) })),
      ).toEqual(fetched.map((one) => ({ download: one.label, hops: [[302], [302], [302]] })));
    }
    await forget(service, fetched);
  },
  120_000,
);

type StreamServing = {
  server: ServerName;
  streams: StreamName[];
  /** Where the stream's folder is put: linked (default), or copied with gzipped playlists and manifests. */
  copy?: 'gzip';
  /** The folder's name; unique per download. */
  folder?(kind: StreamName, n: number): string;
  /** Asked for through the redirect chain. */
  hops?: boolean;
};

// Python's tests take the other stream kinds; these are the ones each configuration bears on.
const streamServings: Array<[string, StreamServing]> = [
  [
    'with keep-alive (the default)',
    { server: 'keep-alive (the default)', streams: ['hls-ts', 'hls-fmp4', 'hls-single-file', 'dash-number', 'dash-list-ranges', 'dash-base'] },
  ],
  ['with keepalive_timeout 0', { server: 'keepalive_timeout 0', streams: ['hls-ts', 'dash-list-ranges'] }],
  ['with max_ranges 0 (a 200 with the whole file to every Range)', { server: 'max_ranges 0', streams: ['hls-single-file', 'dash-list-ranges'] }],
  ['with gzip on', { server: 'gzip on', streams: ['hls-master'] }],
  ['with gzip_static always and pre-gzipped playlists and manifests', { server: 'gzip_static always', streams: ['hls-master', 'dash-number'], copy: 'gzip' }],
  ['behind a chain of 3 redirects (302)', { server: 'a chain of 3 redirects', streams: ['hls-ts', 'dash-number'], hops: true }],
  ['serving playlists and manifests as text/plain', { server: 'playlists and manifests as text/plain', streams: ['hls-ts', 'dash-number'] }],
  ['with limit_rate 2m', { server: 'limit_rate 2m', streams: ['hls-ts'] }],
  [`from a folder named ${NON_ASCII}`, { server: 'keep-alive (the default)', streams: ['hls-ts'], folder: (kind, n) => `/streams/${NON_ASCII} ${kind} ${n}` }],
];

const encodedPath = (decoded: string) => decoded.split('/').map(encodeURIComponent).join('/');

test.each(streamServings.map(([how, serving]) => [how, serving.streams.map((kind) => STREAMS[kind]).join(', '), serving] as const))(
  'when nginx %s serves %s, all at once, then every download completes on its first attempt with the same frames, asking for no byte twice',
  async (_how, _streams, serving) => {
    const planned = await Promise.all(
      serving.streams.map(async (kind) => {
        const folder = serving.folder?.(kind, nextDownload()) ?? `/streams/${kind}-${nextDownload()}`;
        await (serving.copy === 'gzip' ? copyWithGzip(root, folder, streams[kind].dir) : linkInto(root, folder, streams[kind].dir));
        const entry = `${encodedPath(folder)}/${streams[kind].entry}`;
        return { kind, folder, asked: serving.hops ? `/hop1${entry}` : entry };
      }),
    );
    const done = await downloadAtOnce(
      service,
      planned.map(({ asked }) => nginx[serving.server].url + asked),
    );
    const fetched = planned.map(({ kind, folder }, i) => ({ label: kind, target: folder, source: streams[kind].reference, done: done[i]! }));
    await expectSameFrames(service, fetched);

    const log = await settledLog(nginx[serving.server]);
    const logged = planned.map(({ kind, folder }) => {
      const requests = under(log, folder);
      return {
        download: kind,
        entry: requests.filter((request) => request.path === `${folder}/${streams[kind].entry}`).map((request) => request.status),
        failed: requests.filter((request) => request.status !== 200 && request.status !== 206).map((request) => `${request.target} ${request.status}`),
        twice: bytesAskedTwice(requests),
        // With gzip_static always, the server under test really did send every playlist and manifest compressed.
        uncompressed:
          serving.copy === 'gzip'
            ? requests.filter((request) => /\.(m3u8|mpd)$/.test(request.path) && request.contentEncoding !== 'gzip').map((request) => request.target)
            : [],
      };
    });
    expect(logged).toEqual(planned.map(({ kind }) => ({ download: kind, entry: [200], failed: [], twice: [], uncompressed: [] })));
    await forget(service, fetched);
  },
  120_000,
);

test.each([
  ['gzip on', false],
  ['gzip_static always and a pre-gzipped page', true],
] as const)(
  'when nginx with %s serves a page with a <video>, then the download completes on its first attempt with the file byte for byte, page and file asked for once',
  async (how, compressed) => {
    const server: ServerName = compressed ? 'gzip_static always' : 'gzip on';
    const n = nextDownload();
    const target = `/media/above-64k.mp4?download=${n}`;
    const html = `<!doctype html><html><head><title>A page</title></head><body><video controls src="${target}"></video></body></html>`;
    const page = `/pages/${n}/page.html`;
    await mkdir(path.join(root, 'pages', String(n)));
    await writeFile(path.join(root, page), html);
    if (compressed) await writeFile(path.join(root, `${page}.gz`), gzipSync(html));
    const [done] = await downloadOneAfterAnother(service, [nginx[server].url + page]);
    const fetched = [{ label: `page (${how})`, target, source: media['above-64k.mp4'], done: done! }];
    await expectWhole(service, fetched);

    const requests = await settledLog(nginx[server]);
    expect(loggedFor(requests, page).map((request) => request.status)).toEqual([200]);
    expect(loggedFor(requests, target).map((request) => request.status)).toEqual([200]);
    // The server under test really did send the page compressed.
    if (compressed) expect(requests.find((request) => request.target === page)?.contentEncoding).toBe('gzip');
    await forget(service, fetched);
  },
);

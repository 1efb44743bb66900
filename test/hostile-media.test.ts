import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { layOut } from '../src/sources/segmented/layout.ts';
import { startTestService, type Download, type TestService } from './support/api.ts';
import { runFfmpeg } from './support/ffmpeg.ts';
import { useService } from './support/harness.ts';
import { watchLargestFile } from './support/largest-file.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { boxesIn, withSize, type FileBox } from './support/mp4-boxes.ts';
import { downloadWhileProbing, expectNothingStored, placesOf } from './support/outcomes.ts';
import { watchResponsiveness } from './support/responsiveness.ts';
import { dashFixtures, type DashFixture, type DashFixtureName } from './support/streams/dash-fixtures.ts';
import { prepareHlsFixtures, serveHlsFixture, type HlsFixtures } from './support/streams/hls-fixtures.ts';
import { mountTmpfs, unmountTmpfs } from './support/tmpfs.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

// What a source sends is an attacker's input. Whatever it is, the API keeps answering, a download
// that fails leaves no file, no file of the machine comes out, and nothing ffmpeg writes grows
// past MAX_FILE_BYTES.

const CAPPED_BYTES = 1_000_000;
const SLOWEST_PROBE_MS = 500;

const { app, source } = useService({ maxAttempts: 1 });
/** MAX_FILE_BYTES of 1 MB. */
let capped: TestService;
let hls: HlsFixtures;
let scratch: string;
/** A file of the machine that no download may hand out: an MP4, so that ffmpeg would read it gladly. */
let secret: string;

beforeAll(async () => {
  [capped, hls] = await Promise.all([startTestService({ maxAttempts: 1, maxFileBytes: CAPPED_BYTES }), prepareHlsFixtures()]);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'vds-hostile-media-'));
  secret = path.join(scratch, 'secret.mp4');
  // The clip with a mark of its own, so that no honest download is byte for byte this file.
  await runFfmpeg(['-i', mediaPath('clip.mp4'), '-c', 'copy', '-metadata', `comment=secret ${randomUUID()}`, '-f', 'mp4', secret]);
}, 120_000);

afterAll(async () => {
  await capped?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** Creates a download and waits for its end while the API is probed; it must answer every probe quickly. */
const download = (service: TestService, body: Record<string, unknown>) => downloadWhileProbing(service, body, { slowestProbeMs: SLOWEST_PROBE_MS });

/** No stored file of `service` is the secret. */
async function expectSecretNowhere(service: TestService): Promise<void> {
  const files = path.join(service.config.dataDir, 'files');
  const secretHash = await sha256File(secret);
  for (const name of await readdir(files)) expect(await sha256File(path.join(files, name))).not.toBe(secretHash);
}

/** A VOD media playlist of `segments` (URIs relative to it), one second each. */
function mediaPlaylist(segments: string[]): string {
  return [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    '#EXT-X-TARGETDURATION:1',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    ...segments.flatMap((uri) => ['#EXTINF:1.0,', uri]),
    '#EXT-X-ENDLIST',
    '',
  ].join('\n');
}

describe('declared content types', () => {
  // Bytes that no signature knows and that are no playlist, manifest or page.
  const unrecognised = Buffer.alloc(64 * 1024, 'not media at all; ');

  test.each([
    ['video/(a+)+', 'a pattern that takes exponential time'],
    ['video/(', 'a pattern that does not compile'],
    ['video/x, text/html', 'two types in one'],
  ])(
    'when unrecognised bytes are declared %p (%s), then the download fails as unsupported_source, the API answering throughout, and no file is left',
    async (contentType) => {
      const name = `${'a'.repeat(32)}!`;
      const url = source.content(`/declared/${encodeURIComponent(contentType)}/${name}`, unrecognised, { contentType });
      // With a dot before the a's, a pattern made of the type would backtrack 2^32 times on this name.
      const done = await download(app, { url, filename: `clip.${'a'.repeat(32)}!` });

      expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', retryable: false }, file: null });
      await expectNothingStored(app, done.id);
    },
  );

  test('when a real MP4 is declared "video/x, text/html", then it is stored and served as video/mp4', async () => {
    const url = source.file('/declared/both.mp4', mediaPath('clip.mp4'), { contentType: 'video/x, text/html' });
    const done = await download(app, { url, filename: `clip.${'a'.repeat(32)}!` });

    expect(done).toMatchObject({ status: 'completed', file: { content_type: 'video/mp4', filename: `clip.${'a'.repeat(32)}!.mp4` } });
    const served = await app.http.getFile(done.download_url!);
    expect(served.headers['content-type']).toBe('video/mp4');
  });
});

describe('files that only look like media', () => {
  test('when a file is an MP4 header followed by junk, then the download fails as unsupported_source and no file is left', async () => {
    const header = (await readFile(mediaPath('clip.mp4'))).subarray(0, 32);
    expect(header.toString('latin1', 4, 8)).toBe('ftyp');
    const url = source.content('/forged/junk.bin', Buffer.concat([header, Buffer.alloc(3000, 'A')]), { contentType: 'application/octet-stream' });
    const done = await download(app, { url });
    expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', message: expect.stringMatching(/No playable video or audio/) } });
    await expectNothingStored(app, done.id);
  });

  test('when a fast-start MP4 is cut after its index and part of its media data, then the download fails as processing_failed and no file is left; whole, it completes', async () => {
    // ffmpeg reads such a file without a complaint: its index is all there, only the samples past the cut are not.
    const whole = await readFile(mediaPath('clip.mp4'));
    const boxes = boxesIn(whole);
    expect(boxes.map((box) => box.type)).toEqual(expect.arrayContaining(['moov', 'mdat']));
    const mdat = boxes.find((box) => box.type === 'mdat')!;
    expect(boxes.findIndex((box) => box.type === 'moov')).toBeLessThan(boxes.indexOf(mdat));
    const cut = whole.subarray(0, mdat.start + Math.floor((mdat.end - mdat.start) / 2));

    const done = await download(app, { url: source.content('/cut/fast-start.mp4', cut, { contentType: 'video/mp4' }) });
    expect(done).toMatchObject({
      status: 'failed',
      error: {
        code: 'processing_failed',
        retryable: false,
        message: expect.stringMatching(
          /cut short, damaged or beyond what the service checks: track \d+ has \d+ bytes of samples at byte \d+, past the end of the \d+-byte file/,
        ),
      },
      file: null,
    });
    await expectNothingStored(app, done.id);

    const completed = await download(app, { url: source.content('/cut/whole.mp4', whole, { contentType: 'video/mp4' }) });
    expect(completed).toMatchObject({ status: 'completed', file: { content_type: 'video/mp4', size_bytes: whole.length } });
  });
});

describe('damaged MP4s', () => {
  // ffmpeg reads each of these with at most a line of complaint, and a direct file is handed back as it came.
  /** The three layouts ffmpeg writes: index first (clip.mp4), index at the end, and fragmented (a fragment per second). */
  const layouts: Record<'fast-start' | 'index at the end' | 'fragmented', Buffer> = {} as never;

  beforeAll(async () => {
    const remuxed = async (input: string, movflags: string[]) => {
      const output = path.join(scratch, `${randomUUID()}.mp4`);
      await runFfmpeg(['-i', input, '-c', 'copy', ...movflags, '-f', 'mp4', output]);
      return readFile(output);
    };
    layouts['fast-start'] = await readFile(mediaPath('clip.mp4'));
    layouts['index at the end'] = await remuxed(mediaPath('clip.mp4'), []);
    layouts.fragmented = await remuxed(mediaPath('keyframes.mp4'), ['-movflags', 'frag_keyframe+empty_moov+default_base_moof']);
  }, 60_000);

  const only = (boxes: FileBox[], type: string): FileBox => {
    const found = boxes.filter((box) => box.type === type);
    expect(found).toHaveLength(1);
    return found[0]!;
  };
  /** The fragmented file cut halfway into its last mdat, and that mdat's box. */
  const cutFragmented = (): [Buffer, FileBox] => {
    const file = layouts.fragmented;
    const boxes = boxesIn(file);
    expect(boxes.filter((box) => box.type === 'moof').length).toBeGreaterThan(5);
    const mdat = boxes.findLast((box) => box.type === 'mdat')!;
    return [file.subarray(0, mdat.start + Math.floor((mdat.end - mdat.start) / 2)), mdat];
  };

  test.each([
    [
      'a fragmented MP4 is cut inside its last mdat',
      () => cutFragmented()[0],
      /the fragment whose moof is at byte \d+ has \d+ bytes of samples at byte \d+, past the end of the \d+-byte file/,
    ],
    [
      "a fragmented MP4 is cut inside its last mdat, whose size is set to what is left (only its moof's trun tells)",
      () => {
        const [cut, mdat] = cutFragmented();
        return withSize(cut, mdat, cut.length - mdat.start);
      },
      /the fragment whose moof is at byte \d+ has \d+ bytes of samples at byte \d+, past the end of the \d+-byte file/,
    ],
    [
      'the first trak of an MP4 swallows the next one',
      () => {
        const file = layouts['fast-start'];
        const traks = boxesIn(file, only(boxesIn(file), 'moov')).filter((box) => box.type === 'trak');
        expect(traks).toHaveLength(2);
        return withSize(file, traks[0]!, traks[1]!.end - traks[0]!.start);
      },
      /track 1's box swallows the track after it/,
    ],
    [
      'an MP4 whose index comes after its media is cut inside its mdat',
      () => {
        const file = layouts['index at the end'];
        const mdat = only(boxesIn(file), 'mdat');
        return file.subarray(0, mdat.start + Math.floor((mdat.end - mdat.start) / 2));
      },
      /its mdat box at byte \d+ claims \d+ bytes, \d+ more than the file holds/,
    ],
    [
      'an MP4 has media data and no index at all',
      () => {
        const file = layouts['index at the end'];
        return file.subarray(0, only(boxesIn(file), 'mdat').end);
      },
      /it has media data \(mdat\) but no index \(moov\)/,
    ],
    [
      'the mdat of an MP4 claims more bytes than the file holds',
      () => {
        const file = layouts['fast-start'];
        const mdat = only(boxesIn(file), 'mdat');
        return withSize(file, mdat, mdat.end - mdat.start + 5000);
      },
      /its mdat box at byte \d+ claims \d+ bytes, 5000 more than the file holds/,
    ],
  ])('when %s, then the download fails as processing_failed with why, and no file is left', async (_kind, damaged, why) => {
    const done = await download(app, { url: source.content(`/damaged/${randomUUID()}.mp4`, damaged(), { contentType: 'video/mp4' }) });

    expect(done).toMatchObject({
      status: 'failed',
      error: { code: 'processing_failed', retryable: false, message: expect.stringMatching(why) },
      file: null,
    });
    expect(done.error!.message).toMatch(/^The fetched file is cut short, damaged/);
    await expectNothingStored(app, done.id);
  });

  test.each(['fast-start', 'index at the end', 'fragmented'] as const)('when an MP4 %s is whole, then it completes as it came', async (layout) => {
    const file = layouts[layout];
    const done = await download(app, { url: source.content(`/whole/${randomUUID()}.mp4`, file, { contentType: 'video/mp4' }) });

    expect(done).toMatchObject({ status: 'completed', file: { content_type: 'video/mp4', size_bytes: file.length } });
  });
});

describe('damaged fragmented segments', () => {
  test('when the last segment of an fMP4 HLS stream is cut inside its mdat, then the download fails as processing_failed, where ffmpeg would join what is there', async () => {
    const fixture = hls.fmp4;
    const playlist = await readFile(path.join(fixture.dir, fixture.playlist), 'utf8');
    const segment = await readFile(path.join(fixture.dir, 'seg3.m4s'));
    const mdat = boxesIn(segment).findLast((box) => box.type === 'mdat')!;
    source.directory('/cut-segment', fixture.dir);
    source.content('/cut-segment/cut3.m4s', segment.subarray(0, mdat.start + Math.floor((mdat.end - mdat.start) / 2)));
    expect(playlist).toContain('seg3.m4s');
    const url = source.content('/cut-segment/cut.m3u8', playlist.replace('seg3.m4s', 'cut3.m4s'));

    const done = await download(app, { url });

    expect(done).toMatchObject({
      status: 'failed',
      error: {
        code: 'processing_failed',
        retryable: false,
        message: expect.stringMatching(/the fragment whose moof is at byte \d+ has \d+ bytes of samples at byte \d+, past the end/),
      },
      file: null,
    });
    await expectNothingStored(app, done.id);
  });
});

describe('DASH streams whose MPD does not match their segments', () => {
  let dash: Record<DashFixtureName, DashFixture>;
  beforeAll(async () => {
    dash = await dashFixtures();
  }, 120_000);

  test('when an MPD says its segments last @duration="0", then the download fails as unsupported_source instead of completing with its first segment alone', async () => {
    const fixture = dash.number;
    const manifest = await readFile(fixture.manifest, 'utf8');
    const zero = manifest.replaceAll(/(<SegmentTemplate\b[^>]*\sduration=")\d+"/g, '$10"');
    expect(zero).not.toBe(manifest);
    source.directory('/zero-duration', fixture.dir);
    const done = await download(app, { url: source.content('/zero-duration/zero.mpd', zero, { contentType: 'application/dash+xml' }) });

    expect(done).toMatchObject({
      status: 'failed',
      error: { code: 'unsupported_source', retryable: false, message: expect.stringMatching(/gives its segments a duration of 0, so they cannot be counted/) },
      file: null,
    });
    await expectNothingStored(app, done.id);
  });
});

describe('segments that are not media', () => {
  test.each([
    ['an HLS playlist', () => `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:3.0,\nfile://${secret}\n#EXT-X-ENDLIST\n`],
    ['an ffconcat list', () => `ffconcat version 1.0\nfile 'file:${secret}'\nfile '${secret}'\n`],
    [
      'a DASH MPD',
      () =>
        `<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT3S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">` +
        `<Period><AdaptationSet mimeType="video/mp4" segmentAlignment="true"><Representation id="v" bandwidth="100000" width="320" height="240" codecs="avc1.64000d">` +
        `<BaseURL>file://${secret}</BaseURL><SegmentBase indexRange="0-0"/></Representation></AdaptationSet></Period></MPD>\n`,
    ],
  ])('when the one segment of an HLS playlist is %s naming a local MP4, then the download fails and that file is never served', async (kind, body) => {
    const prefix = `/segment-is/${kind.replaceAll(' ', '-')}`;
    source.content(`${prefix}/seg0.ts`, body());
    const url = source.content(`${prefix}/index.m3u8`, mediaPlaylist(['seg0.ts']));

    const done = await download(app, { url });

    expect(done).toMatchObject({ status: 'failed', token: null, download_url: null, file: null });
    expect(done.error!.code).toMatch(/^(unsupported_source|processing_failed)$/);
    await expectNothingStored(app, done.id);
    await expectSecretNowhere(app);
  });

  test('when an audio segment is an ffconcat list repeating the video track 2000 times, then nothing ffmpeg writes grows past MAX_FILE_BYTES and no file is left', async () => {
    const prefix = '/amplified';
    const segmentDir = hls.ts.dir;
    const segments = (await readdir(segmentDir)).filter((name) => name.endsWith('.ts')).sort();
    for (const name of segments) source.file(`${prefix}/${name}`, path.join(segmentDir, name));
    // Where the worker joins the video track: the list names it as a sibling of its own file.
    const [videoTrack] = layOut({ tracks: [{ kind: 'video', segments: segments.map((name) => ({ url: source.url(`${prefix}/${name}`) })) }] }, '/');
    source.content(`${prefix}/concat.aac`, `ffconcat version 1.0\n${`file '${path.basename(videoTrack!.file)}'\n`.repeat(2000)}`);
    source.content(`${prefix}/video.m3u8`, mediaPlaylist(segments));
    source.content(`${prefix}/audio.m3u8`, mediaPlaylist(['concat.aac']));
    const master = [
      '#EXTM3U',
      '#EXT-X-VERSION:3',
      '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="main",DEFAULT=YES,AUTOSELECT=YES,URI="audio.m3u8"',
      '#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,AUDIO="audio"',
      'video.m3u8',
      '',
    ].join('\n');
    const url = source.content(`${prefix}/master.m3u8`, master);

    const largest = watchLargestFile(path.join(capped.config.dataDir, 'partial'));
    const done = await download(capped, { url });
    const largestBytes = await largest.stop();

    expect(done.status).toBe('failed');
    expect(done.error!.code).toMatch(/^(unsupported_source|processing_failed|source_too_large)$/);
    // Every segment was fetched: the refusal came after the fetch, where ffmpeg would have run.
    for (const name of [...segments, 'concat.aac']) expect(source.requestsFor(`${prefix}/${name}`).length).toBeGreaterThan(0);
    expect(largestBytes).toBeLessThanOrEqual(CAPPED_BYTES);
    await expectNothingStored(capped, done.id);
  });
});

describe('output larger than its input', () => {
  test('when an honest stream remuxes into more bytes than MAX_FILE_BYTES though its segments are fewer, then it fails as source_too_large and no file is left', async () => {
    const fixture = hls.fmp4;
    const url = serveHlsFixture(source, fixture, '/honest/fmp4');
    const names = (await readdir(fixture.dir)).filter((name) => name === 'init.mp4' || name.endsWith('.m4s'));
    const fetchedBytes = (await Promise.all(names.map((name) => stat(path.join(fixture.dir, name))))).reduce((sum, stats) => sum + stats.size, 0);

    // What this ffmpeg makes of the stream when nothing limits it.
    const reference = await download(app, { url });
    expect(reference.status).toBe('completed');
    // The premise, not a reason to pass quietly: an ffmpeg that makes fewer bytes needs another fixture.
    expect(reference.file!.size_bytes).toBeGreaterThan(fetchedBytes);

    // Just enough for every segment: only the remuxed file is over the limit.
    const exact = await startTestService({ maxAttempts: 1, maxFileBytes: fetchedBytes });
    try {
      const done = await download(exact, { url });
      expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large', retryable: false }, file: null });
      // The fetch passed: every segment was asked for again, for this download too.
      for (const name of names) expect(source.requestsFor(`/honest/fmp4/${name}`)).toHaveLength(2);
      await expectNothingStored(exact, done.id);
    } finally {
      await exact.stop();
    }
  });
});

describe('a download that ends elsewhere while it runs', () => {
  test('when the download is no longer active once its file is whole, then the file is not kept', async () => {
    // Slow enough to still be fetching when the row is ended under it.
    const routePath = '/ended/big.mp4';
    const url = source.file(routePath, mediaPath('big.mp4'), { bytesPerSecond: 2 * 1024 * 1024 });
    const responsiveness = watchResponsiveness(app.service.url);
    try {
      const created = await app.http.createDownload({ url });
      const id = (created.body as Download).id;
      await waitForProgress(app.http, id, 1);
      const db = new pg.Client({ connectionString: app.config.databaseUrl });
      await db.connect();
      try {
        await db.query(`UPDATE downloads SET status = 'failed', error_code = 'internal_error', error_message = 'Ended by the test.' WHERE id = $1`, [id]);
      } finally {
        await db.end();
      }

      await waitFor('the source to send the whole file', () => source.requestsFor(routePath)[0]?.outcome === 'complete', 20_000);
      // The working directory goes when the file is moved into files/: from then on, only the file could stay.
      const [partial, file] = placesOf(app, id);
      await waitFor('the worker to be done with the file', () => !existsSync(partial) && !existsSync(file), 5_000).catch(() => {});
      expect([partial, file].filter((place) => existsSync(place))).toEqual([]);
      expect((await app.http.getDownload(id)).body).toMatchObject({ status: 'failed', file: null, token: null });
    } finally {
      const { slowestMs } = await responsiveness.stop();
      expect(slowestMs).toBeLessThan(SLOWEST_PROBE_MS);
    }
  });
});

describe('a full disk', () => {
  const mounts: string[] = [];
  const services: TestService[] = [];

  /** A service whose DATA_DIR is a tmpfs of `size` (its database stays the test database). */
  async function serviceOnTmpfs(size: string): Promise<TestService> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-full-disk-'));
    await mountTmpfs(dir, size);
    mounts.push(dir);
    const service = await startTestService({ maxAttempts: 3, dataDir: dir });
    services.push(service);
    return service;
  }

  let small: TestService;
  let tiny: TestService;

  beforeAll(async () => {
    [small, tiny] = [await serviceOnTmpfs('4m'), await serviceOnTmpfs('200k')];
  });

  afterAll(async () => {
    await Promise.all(services.map((service) => service.stop()));
    for (const dir of mounts) {
      await unmountTmpfs(dir);
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('when a direct file is larger than the disk, then the download fails at once as storage_full, leaves nothing, and the next download completes', async () => {
    const big = Buffer.concat([await readFile(mediaPath('clip.mp4')), Buffer.alloc(8 * 1024 * 1024)]);
    const done = await download(small, { url: source.content('/disk/too-big.mp4', big, { contentType: 'video/mp4' }) });

    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'storage_full', retryable: false }, file: null });
    await expectNothingStored(small, done.id);

    const after = await download(small, { url: source.file('/disk/clip.mp4', mediaPath('clip.mp4')) });
    expect(after).toMatchObject({ status: 'completed', file: { size_bytes: (await stat(mediaPath('clip.mp4'))).size } });
    expect(existsSync(path.join(small.config.dataDir, 'files', after.id))).toBe(true);
  });

  test('when the segments of a stream fit on the disk but the file ffmpeg makes of them does not, then the download fails as storage_full and leaves nothing', async () => {
    const done = await download(tiny, { url: serveHlsFixture(source, hls.ts, '/disk/hls') });

    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'storage_full', retryable: false }, file: null });
    await expectNothingStored(tiny, done.id);
    expect(await readdir(path.join(tiny.config.dataDir, 'partial'))).toEqual([]);
  });
});

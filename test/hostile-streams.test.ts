import { stat } from 'node:fs/promises';
import { loadConfig } from '../src/config/index.ts';
import { DownloadError } from '../src/core/errors.ts';
import { DocumentSandbox } from '../src/sources/sandbox/document-sandbox.ts';
import type { Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { downloadToEnd, downloadWhileProbing as probedDownload, expectNothingStored } from './support/outcomes.ts';

// Playlists and manifests written to hurt: each asks the service to hold more than it should. The
// download must fail with a clear code while the API keeps answering quickly, the process lives
// on (a V8 abort would take this test process with it), and nothing is left on disk.

const MAX_FILE_BYTES = 1_000_000;

const { app, source } = useService({ maxAttempts: 1, maxFileBytes: MAX_FILE_BYTES });

beforeAll(async () => {
  // The first download of a process pays once for what every later one reuses (the database
  // client prepares each query on its first use); the probes measure what hostile input costs.
  await downloadToEnd(app, { url: source.file('/warm-up.mp4', mediaPath('clip.mp4')) });
});

/** Downloads `url` while probing the API; every download here fails, and must leave nothing behind. */
async function downloadWhileProbing(url: string): Promise<Download> {
  const done = await probedDownload(app, { url });
  await expectNothingStored(app, done.id);
  return done;
}

function mpd(representation: string, extra = ''): string {
  return `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S" minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
  ${extra}
  <Period>
    <AdaptationSet mimeType="video/mp4">${representation}</AdaptationSet>
  </Period>
</MPD>`;
}

const dash = (name: string, text: string) => source.content(`/hostile/${name}.mpd`, text, { contentType: 'application/dash+xml' });

test('when a 448-byte MPD asks for two billion segments with endNumber, then the download fails as source_too_large and the service stays up', async () => {
  const text = mpd(
    '<Representation id="v" bandwidth="1" width="2" height="2"><SegmentTemplate media="s$Number$.m4s" initialization="i.mp4" duration="1" endNumber="2000000000"/></Representation>',
  );
  const done = await downloadWhileProbing(dash('end-number', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large', retryable: false } });
  expect(done.error?.message).toMatch(/2000000000 segments.*MAX_SEGMENTS/);
});

test('when an MPD repeats a SegmentTimeline entry a trillion times, then the download fails as source_too_large', async () => {
  const text = mpd(
    '<Representation id="v" bandwidth="1"><SegmentTemplate media="s$Time$.m4s" initialization="i.mp4"><SegmentTimeline><S t="0" d="1" r="1000000000000"/></SegmentTimeline></SegmentTemplate></Representation>',
  );
  const done = await downloadWhileProbing(dash('timeline', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
});

test('when an MPD has segments of a nanosecond, then the download fails as source_too_large instead of counting ten billion of them', async () => {
  const text = mpd(
    '<Representation id="v" bandwidth="1"><SegmentTemplate media="s$Number$.m4s" initialization="i.mp4" duration="1" timescale="1000000000"/></Representation>',
  );
  const done = await downloadWhileProbing(dash('tiny-duration', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
});

test('when an MPD multiplies BaseURLs on every level, then the download fails as source_too_large before they are multiplied out', async () => {
  const baseUrls = (count: number) => Array.from({ length: count }, (_unused, index) => `<BaseURL>b${index}/</BaseURL>`).join('');
  const text = mpd(
    `${baseUrls(40)}<Representation id="v" bandwidth="1">${baseUrls(40)}<SegmentTemplate media="s$Number$.m4s" duration="1"/></Representation>`,
    baseUrls(40),
  );
  const done = await downloadWhileProbing(dash('base-urls', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
  expect(done.error?.message).toMatch(/Representations/);
});

test('when an MPD pads segment numbers to a billion digits, then the download fails as source_too_large', async () => {
  const text = mpd('<Representation id="v" bandwidth="1"><SegmentTemplate media="s$Number%01000000000d$.m4s" duration="1"/></Representation>');
  const done = await downloadWhileProbing(dash('padding', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
});

test('when an MPD points its segments at file: URLs, then the download fails as unsupported_source without reading them', async () => {
  const text = mpd(
    '<Representation id="v" bandwidth="1"><BaseURL>file:///etc/</BaseURL><SegmentTemplate media="passwd" initialization="hostname"/></Representation>',
  );
  const done = await downloadWhileProbing(dash('file-urls', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', message: expect.stringMatching(/file: URL/) } });
});

test('when an MPD resolves its segments to something that is not a URL, then the download fails as unsupported_source', async () => {
  // mpd-parser resolves a segment against a data: BaseURL to a bare path ("/s1.m4s").
  const text = mpd('<Representation id="v" bandwidth="1"><BaseURL>data:,x</BaseURL><SegmentTemplate media="s$Number$.m4s" duration="1"/></Representation>');
  const done = await downloadWhileProbing(dash('not-a-url', text));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', message: expect.stringMatching(/not a URL/) } });
});

test('when a 16 MiB HLS playlist lists 1.3 million segments, then the download fails as source_too_large without blocking the API', async () => {
  const lines = ['#EXTM3U', '#EXT-X-TARGETDURATION:1', '#EXT-X-PLAYLIST-TYPE:VOD'];
  while (lines.length < 1_300_000) lines.push('#EXTINF:1,', 's.ts');
  lines.push('#EXT-X-ENDLIST');
  const text = lines.join('\n').slice(0, 16 * 1024 * 1024 - 32);
  const url = source.content('/hostile/million.m3u8', `${text}\n#EXT-X-ENDLIST\n`, { contentType: 'application/vnd.apple.mpegurl' });
  const done = await downloadWhileProbing(url);
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
  expect(done.error?.message).toMatch(/MAX_SEGMENTS/);
});

test('when a source answers a byte range with the whole file, then the bytes before the range count against MAX_FILE_BYTES', async () => {
  const file = mediaPath('big.mp4');
  const size = (await stat(file)).size;
  expect(size).toBeGreaterThan(2 * MAX_FILE_BYTES);
  // One small range far into a file whose server ignores Range: honest bytes are few, read bytes many.
  source.file('/hostile/no-ranges.mp4', file, { ranges: false });
  const offset = size - 1000;
  const playlist = [
    '#EXTM3U',
    '#EXT-X-VERSION:4',
    '#EXT-X-TARGETDURATION:1',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    '#EXTINF:1,',
    `#EXT-X-BYTERANGE:1000@${offset}`,
    'no-ranges.mp4',
    '#EXT-X-ENDLIST',
  ].join('\n');
  const done = await downloadWhileProbing(source.content('/hostile/ranged.m3u8', playlist, { contentType: 'application/vnd.apple.mpegurl' }));
  expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
  const sent = source.requestsFor('/hostile/no-ranges.mp4').reduce((sum, request) => sum + request.bytesSent, 0);
  expect(sent).toBeLessThan(size);
});

describe('the document reader', () => {
  const maxSegments = loadConfig({}).maxSegments;
  const playlist = (segments: number, uriLength: number) =>
    [
      '#EXTM3U',
      '#EXT-X-TARGETDURATION:1',
      ...Array.from({ length: segments }, (_unused, index) => `#EXTINF:1,\n${String(index).padStart(uriLength, 'a')}.ts`),
      '#EXT-X-ENDLIST',
    ].join('\n');

  test('when a document needs more memory than its thread has, then the read fails as source_too_large and the next read still works', async () => {
    const reader = new DocumentSandbox({ heapMb: 16, timeoutMs: 30_000 });
    try {
      const input = {
        bytes: Buffer.from(playlist(40_000, 300)),
        url: 'http://127.0.0.1/p.m3u8',
        quality: 'best' as const,
        expect: 'any' as const,
        maxSegments,
      };
      const failure = await reader.hls(input, AbortSignal.timeout(60_000)).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DownloadError);
      expect(failure).toMatchObject({ code: 'source_too_large', message: expect.stringMatching(/16 MB/) });
      const small = await reader.hls({ ...input, bytes: Buffer.from(playlist(3, 1)) }, AbortSignal.timeout(60_000));
      expect(small).toMatchObject({ type: 'media', track: { kind: 'muxed' } });
    } finally {
      await reader.close();
    }
  });

  test("when a manifest makes its parser complain 200 000 times, then nothing of it reaches the service's output", async () => {
    const reader = new DocumentSandbox();
    let written = 0;
    const streams = [process.stdout, process.stderr];
    const originals = streams.map((stream) => stream.write.bind(stream));
    for (const stream of streams) {
      stream.write = (chunk: string | Uint8Array) => {
        written += chunk.length;
        return true;
      };
    }
    try {
      const text = mpd(`<Representation id="v" bandwidth="1"><BaseURL>clip.mp4</BaseURL></Representation><X>${'&zz;'.repeat(200_000)}</X>`);
      const plan = await reader.dash({ url: 'http://127.0.0.1/m.mpd', bytes: Buffer.from(text), quality: 'best', maxSegments }, AbortSignal.timeout(60_000));
      // Read to its end in spite of the complaints: the parser did meet every one of them.
      expect(plan).toEqual({ subtitles: [], tracks: [{ kind: 'muxed', segments: [{ url: 'http://127.0.0.1/clip.mp4' }] }] });
      // Output of a thread reaches this process's streams asynchronously; a moment for any of it to arrive.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      // Closed while still counting: what the thread wrote and this process has not yet shown counts too.
      await reader.close();
      streams.forEach((stream, index) => (stream.write = originals[index]!));
    }
    expect(written).toBeLessThan(1000);
  });

  test("when a document is read, then its bytes are moved to the thread, which decodes them: the API's thread neither decodes nor copies them", async () => {
    const reader = new DocumentSandbox();
    try {
      const bytes = Buffer.from(playlist(20_000, 10));
      const reading = await reader.hls({ bytes, url: 'http://127.0.0.1/p.m3u8', quality: 'best', expect: 'any', maxSegments }, AbortSignal.timeout(60_000));
      expect(reading.type === 'media' && reading.track.segments.length).toBe(20_000);
      // Moved, the memory is no longer this thread's.
      expect(bytes.buffer.byteLength).toBe(0);
    } finally {
      await reader.close();
    }
  });

  test('when a document takes longer than the time budget, then the read fails as processing_failed', async () => {
    const reader = new DocumentSandbox({ heapMb: 256, timeoutMs: 1 });
    try {
      const input = { bytes: Buffer.from(playlist(40_000, 10)), url: 'http://127.0.0.1/p.m3u8', quality: 'best' as const, expect: 'any' as const, maxSegments };
      const failure = await reader.hls(input, AbortSignal.timeout(60_000)).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'processing_failed', message: expect.stringMatching(/longer than/) });
    } finally {
      await reader.close();
    }
  });
});

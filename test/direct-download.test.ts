import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runFfmpeg } from './support/ffmpeg.ts';
import { startTestService } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath, sha256File } from './support/media.ts';

const { app, source } = useService({ maxAttempts: 3 });

async function download(url: string, body: Record<string, unknown> = {}) {
  const created = await app.http.createDownload({ url, ...body });
  expect(created.status).toBe(202);
  return app.waitForStatus(created.body.id as string, ['completed', 'failed']);
}

describe('direct media URLs', () => {
  test('when the URL is an MP4, then the download completes and the file comes back byte for byte', async () => {
    const url = source.file('/media/clip.mp4', mediaPath('clip.mp4'));
    const done = await download(url);
    const original = await readFile(mediaPath('clip.mp4'));
    expect(done).toMatchObject({
      status: 'completed',
      attempts: 1,
      error: null,
      file: { filename: 'clip.mp4', content_type: 'video/mp4', size_bytes: original.length, sha256: await sha256File(mediaPath('clip.mp4')) },
      progress: { downloaded_bytes: original.length, total_bytes: original.length, percent: 100 },
    });
    expect(done.download_url).toBe(`${app.service.url}/download/${done.token}`);
    expect(Date.parse(done.expires_at!) - Date.parse(done.completed_at!)).toBe(app.config.fileTtlSeconds * 1000);
    const file = await app.http.getFile(done.download_url!);
    expect(file.status).toBe(200);
    expect(file.body.equals(original)).toBe(true);
  });

  test('when the source sends the wrong content type, then the first bytes decide and the name follows the request', async () => {
    const url = source.file('/watch', mediaPath('clip.mp4'), { contentType: 'application/octet-stream' });
    const done = await download(url, { filename: '../My: clip?' });
    expect(done.status).toBe('completed');
    expect(done.file).toMatchObject({ content_type: 'video/mp4', filename: 'My clip.mp4' });
  });

  test('when the file is MXF, whose signature names it application/mxf, then it is still taken as media', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-mxf-'));
    try {
      const mxf = path.join(dir, 'clip.mxf');
      await runFfmpeg(['-f', 'lavfi', '-i', 'testsrc=size=720x576:rate=25:duration=1', '-c:v', 'mpeg2video', '-pix_fmt', 'yuv420p', '-f', 'mxf', mxf]);
      const done = await download(source.file('/media/clip.mxf', mxf, { contentType: 'application/octet-stream' }));
      expect(done).toMatchObject({ status: 'completed', file: { content_type: 'application/mxf', filename: 'clip.mxf' } });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('when the source resets the connection mid-body, then the retry resumes from the partial file', async () => {
    const size = (await stat(mediaPath('big.mp4'))).size;
    const cutAt = Math.floor(size / 2);
    const url = source.file('/media/big-reset.mp4', mediaPath('big.mp4'), { resetAfterBytes: cutAt });
    const done = await download(url);
    expect(done.status).toBe('completed');
    expect(done.attempts).toBe(2);
    expect(done.file?.sha256).toBe(await sha256File(mediaPath('big.mp4')));
    const requests = source.requestsFor('/media/big-reset.mp4');
    expect(requests).toHaveLength(2);
    const resumedFrom = Number(/^bytes=(\d+)-$/.exec(requests[1]!.range ?? '')?.[1]);
    // What reached the disk before the cut is not fetched again; at most what was still in flight.
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThanOrEqual(cutAt);
    expect(requests[1]!.headers['if-range']).toBeDefined();
    expect(requests.reduce((sum, request) => sum + request.bytesSent, 0) - size).toBeLessThanOrEqual(cutAt - resumedFrom);
  });

  test('when a resumed source answers the range with another version of the file, then the download starts over instead of splicing the two', async () => {
    const [first, second] = await Promise.all([readFile(mediaPath('big.mp4')), readFile(mediaPath('clip.mp4'))]);
    const cutAt = 40_000;
    // Version A is cut; asked to resume A (If-Range: "A"), the source sends the rest of version B anyway.
    const url = source.route('/media/changed.mp4', (req, res, { count }) => {
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (count === 1) {
        res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': String(first.length), ETag: '"A"' });
        res.write(first.subarray(0, cutAt));
        // Cut once the bytes have had time to reach the service.
        setTimeout(() => res.destroy(), 300);
      } else if (range) {
        const from = Number(range[1]);
        res.writeHead(206, { 'Content-Type': 'video/mp4', 'Content-Range': `bytes ${from}-${second.length - 1}/${second.length}`, ETag: '"B"' });
        res.end(second.subarray(from));
      } else {
        res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': String(second.length), ETag: '"B"' });
        res.end(second);
      }
    });
    const done = await download(url);
    expect(done).toMatchObject({ status: 'completed', file: { sha256: await sha256File(mediaPath('clip.mp4')), size_bytes: second.length } });
    const requests = source.requestsFor('/media/changed.mp4');
    expect(requests.map((request) => request.range)).toEqual([undefined, expect.stringMatching(/^bytes=\d+-$/), undefined]);
    expect(requests[1]!.headers['if-range']).toBe('"A"');
  });

  test('when the source answers 503 twice, then the download is retried and completes on the third attempt', async () => {
    const url = source.file('/media/flaky.mp4', mediaPath('clip.mp4'), { statuses: [503, 503] });
    const done = await download(url);
    expect(done).toMatchObject({ status: 'completed', attempts: 3, error: null });
  });

  test('when the source keeps failing with 5xx, then the download fails after MAX_ATTEMPTS', async () => {
    const url = source.status('/media/down.mp4', 502);
    const done = await download(url);
    expect(done).toMatchObject({ status: 'failed', attempts: 3, error: { code: 'source_http_error', retryable: true } });
    expect(source.requestsFor('/media/down.mp4')).toHaveLength(3);
  });

  test('when the source answers 404, then the download fails at once without a retry', async () => {
    const url = source.status('/media/missing.mp4', 404);
    const done = await download(url);
    expect(done).toMatchObject({ status: 'failed', attempts: 1, token: null, download_url: null, file: null });
    expect(done.error).toEqual({ code: 'source_http_error', message: 'The source answered HTTP 404.', retryable: false });
    expect(source.requestsFor('/media/missing.mp4')).toHaveLength(1);
  });

  test('when the URL is a plain text document, then the download fails as unsupported_source', async () => {
    const url = source.content('/notes.txt', 'just some words, no video here\n'.repeat(20));
    const done = await download(url);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'unsupported_source', retryable: false } });
  });

  test('when the file is larger than MAX_FILE_BYTES, then it fails as source_too_large', async () => {
    const small = await startTestService({ maxFileBytes: 10_000 });
    try {
      const url = source.file('/media/too-big.mp4', mediaPath('clip.mp4'));
      const created = await small.http.createDownload({ url });
      const done = await small.waitForStatus(created.body.id as string, ['completed', 'failed']);
      expect(done).toMatchObject({ status: 'failed', error: { code: 'source_too_large' } });
    } finally {
      await small.stop();
    }
  });

  test('when the source redirects, then the download follows to the file', async () => {
    const target = source.file('/media/target.mp4', mediaPath('clip.mp4'));
    const url = source.redirect('/go', target, 302);
    const done = await download(url);
    expect(done.status).toBe('completed');
    expect(done.file?.filename).toBe('go.mp4');
    expect(done.source).toEqual({ kind: 'direct', extractor: null, title: null });
  });
});

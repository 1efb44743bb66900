import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateMultipartUploadCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import pg from 'pg';
import type { Config } from '../src/config/index.ts';
import { startService, type Service } from '../src/service.ts';
import { bodyJson, createHttp, startTestService, type Download, type TestService } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { startS3Server, type S3Server } from './support/s3-server.ts';
import { sizedMedia } from './support/sized-media.ts';
import { waitFor, waitForProgress } from './support/waiting.ts';

// STORAGE=s3 against a real S3-compatible server (s3rver) on 127.0.0.1: a file lives only in the
// bucket, a direct file gets there through a multipart upload whose parts are recorded in
// PostgreSQL, and what a download leaves behind (an upload, an object) goes with it.

let s3: S3Server;

beforeAll(async () => {
  s3 = await startS3Server();
});

const { app, source } = useService(() => ({ storage: s3.settings() }));

afterAll(async () => {
  await s3?.close();
});

async function completed(body: Record<string, unknown>, on: TestService = app): Promise<Download> {
  const created = await on.http.createDownload(body);
  expect(created.status).toBe(202);
  return on.waitForStatus((created.body as Download).id, ['completed']);
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function transferRows(id: string): Promise<number> {
  const db = new pg.Client({ connectionString: app.config.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM transfers WHERE download_id = $1', [id]);
    return Number(rows[0]!.n);
  } finally {
    await db.end();
  }
}

test('when a direct file is downloaded, then it streams into a multipart upload, lives only in the bucket, and is served from there', async () => {
  const { 'large.mp4': large } = await sizedMedia();
  const original = await readFile(large);
  const done = await completed({ url: source.file('/large.mp4', large) });

  expect(await s3.objectSize(done.id)).toBe(original.length);
  // Parts of 8 MiB, each its own request, and no second upload of the whole file once it is there.
  const parts = s3.requests.filter((request) => request.startsWith(`PUT /${s3.bucket}/${done.id}?`) && request.includes('partNumber='));
  expect(parts.length).toBe(Math.ceil(original.length / (8 * 1024 * 1024)));
  expect(s3.requests.filter((request) => request === `PUT /${s3.bucket}/${done.id}`)).toEqual([]);
  expect(await transferRows(done.id)).toBe(0);
  // Nothing of it stays on the service's disk.
  expect(existsSync(path.join(app.config.dataDir, 'files', done.id))).toBe(false);
  expect(existsSync(path.join(app.config.dataDir, 'partial'))).toBe(false);

  const whole = await app.http.getFile(done.token!);
  expect(whole.status).toBe(200);
  expect(sha256(whole.body)).toBe(done.file!.sha256);
  const range = await app.http.getFile(done.token!, { Range: 'bytes=1000-1999' });
  expect(range.status).toBe(206);
  expect(range.body.equals(original.subarray(1000, 2000))).toBe(true);
});

test('when the file is made again by ffmpeg (mode audio), then the made file replaces what the transfer uploaded', async () => {
  const done = await completed({ url: source.file('/for-audio.mp4', mediaPath('clip.mp4')), mode: 'audio' });
  expect(done.file!.content_type).toMatch(/^audio\//);
  expect(await s3.objectSize(done.id)).toBe(done.file!.size_bytes);
  const res = await app.http.getFile(done.token!);
  expect(sha256(res.body)).toBe(done.file!.sha256);
});

test('when a completed download is deleted, then its object goes', async () => {
  const done = await completed({ url: source.file('/deleted.mp4', mediaPath('clip.mp4')) });
  expect(await s3.objectSize(done.id)).not.toBeNull();
  const res = await app.http.request('DELETE', `/downloads/${done.id}`, '/downloads/{download_uuid}');
  expect(res.status).toBe(200);
  expect(await s3.objectSize(done.id)).toBeNull();
  expect((await app.http.getFile(done.token!)).status).toBe(410);
});

describe('a completed download looked at again and again', () => {
  const headsOf = (id: string) => s3.requests.filter((request) => request.startsWith(`HEAD /${s3.bucket}/${id}`)).length;
  const statusOf = async (id: string) => ((await app.http.getDownload(id)).body as Download).status;

  test('when it is polled many times in a row, then the bucket sees at most one HEAD of its object', async () => {
    const done = await completed({ url: source.file('/polled.mp4', mediaPath('clip.mp4')) });
    const before = headsOf(done.id);
    for (let poll = 0; poll < 20; poll++) expect(await statusOf(done.id)).toBe('completed');
    expect(headsOf(done.id) - before).toBeLessThanOrEqual(1);
  });

  test('when its object is removed behind the service’s back just after a look found it, then the file link answers 410 at once all the same, and the download is expired from then on', async () => {
    const done = await completed({ url: source.file('/removed-link.mp4', mediaPath('clip.mp4')) });
    expect(await statusOf(done.id)).toBe('completed');
    await s3.removeObject(done.id);
    // What the look found is still taken on trust here...
    expect(await statusOf(done.id)).toBe('completed');
    // ...but not by the file link.
    const res = await app.http.getFile(done.token!);
    expect(res.status).toBe(410);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await statusOf(done.id)).toBe('expired');
  });

  test('when its object is removed behind the service’s back and only the download is polled, then it says expired within the 5 s its presence is remembered', async () => {
    const done = await completed({ url: source.file('/removed-polled.mp4', mediaPath('clip.mp4')) });
    expect(await statusOf(done.id)).toBe('completed');
    await s3.removeObject(done.id);
    await waitFor('the download to say expired', async () => (await statusOf(done.id)) === 'expired', 5_000 + 2_000);
  });
});

test('when a download is cancelled mid-transfer, then its multipart upload is aborted and its record goes', async () => {
  const { 'large.mp4': large } = await sizedMedia();
  const created = await app.http.createDownload({ url: source.file('/slow.mp4', large, { bytesPerSecond: 4 * 1024 * 1024 }) });
  const id = (created.body as Download).id;
  await waitForProgress(app.http, id, 9 * 1024 * 1024);
  expect(await s3.pendingUploads()).toHaveLength(1);
  await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
  await waitFor('the upload to be aborted', async () => (await s3.pendingUploads()).length === 0, 10_000);
  await waitFor('the transfer record to go', async () => (await transferRows(id)) === 0, 10_000);
  expect(await s3.objectSize(id)).toBeNull();
});

test('when a direct file is refused after its transfer (not media), then the object the upload made goes with the download', async () => {
  const noise = Buffer.alloc(9 * 1024 * 1024, 7);
  noise.write('\x00\x00\x00\x18ftypisom', 0, 'latin1');
  const created = await app.http.createDownload({ url: source.content('/noise.mp4', noise) });
  const failed = await app.waitForStatus((created.body as Download).id, ['failed']);
  expect(failed.error!.code).toBe('unsupported_source');
  // Removed just after the status changes.
  await waitFor('the object to go', async () => (await s3.objectSize(failed.id)) === null);
  await waitFor('the transfer record to go', async () => (await transferRows(failed.id)) === 0);
});

test('when the source is an empty file, then the download fails at once as unsupported_source, as with local files', async () => {
  const created = await app.http.createDownload({ url: source.content('/empty.mp4', Buffer.alloc(0)) });
  const failed = await app.waitForStatus((created.body as Download).id, ['failed']);
  expect(failed.error).toMatchObject({ code: 'unsupported_source', retryable: false });
  expect(failed.attempts).toBe(1);
});

test('when a service of another deployment (its own database) starts on the same bucket while a download runs, then its start-up sweep leaves that download’s scratch alone', async () => {
  const { 'large.mp4': large } = await sizedMedia();
  const original = await readFile(large);
  const created = await app.http.createDownload({ url: source.file('/swept.mp4', large, { bytesPerSecond: Math.ceil(original.length / 4) }) });
  const id = (created.body as Download).id;
  await waitForProgress(app.http, id, original.length / 8);
  // A service of its own database sweeps, at its start, the scratch of downloads its database does not know.
  const other = await startTestService({ storage: s3.settings() });
  try {
    const done = await app.waitForStatus(id, ['completed']);
    expect(done.file!.sha256).toBe(sha256(original));
  } finally {
    await other.stop();
  }
}, 60_000);

describe('when the bucket misbehaves', () => {
  afterEach(() => s3.misbehave(null));

  test('when it resets every request for a file, then the file link answers 503 with Retry-After, and the file once it is back', async () => {
    const done = await completed({ url: source.file('/while-down.mp4', mediaPath('clip.mp4')) });
    s3.misbehave((request) => request.includes(done.id), 'reset');
    // Past the second for which the service remembers the object's size.
    await sleep(1_100);
    const down = await app.http.getFile(done.token!);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(bodyJson<{ detail: string }>(down).detail).toBe('The file store is unavailable; try again shortly.');
    s3.misbehave(null);
    expect((await app.http.getFile(done.token!)).status).toBe(200);
  });

  test('when it takes requests and never answers them, then each file request ends in 503 within seconds, and none is stuck once it answers again', async () => {
    const done = await completed({ url: source.file('/hung.mp4', mediaPath('clip.mp4')) });
    await sleep(1_100);
    s3.misbehave((request) => request.includes(done.id));
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: 20 }, () => app.http.getFile(done.token!).then((res) => res.status)));
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 503));
    // Two tries of 10 s without a byte, and the SDK's pause between them: not for ever.
    expect(Date.now() - started).toBeLessThan(40_000);
    s3.misbehave(null);
    expect((await app.http.getFile(done.token!)).status).toBe(200);
  }, 60_000);

  test('when a download is cancelled while its finished file is being uploaded, then it lets go of the upload at once: its object goes well before a held part would time out', async () => {
    const { 'large.mp4': large } = await sizedMedia();
    const created = await app.http.createDownload({ url: source.file('/cancelled-upload.mp4', large), mode: 'mute' });
    const id = (created.body as Download).id;
    await app.waitForStatus(id, ['processing']);
    // The transfer of the source is done; the parts of the muted file's upload wait.
    s3.misbehave((request) => request.startsWith(`PUT /${s3.bucket}/${id}?`) && request.includes('partNumber='));
    // Only this download's parts: an earlier test's held requests must not answer for it.
    const parts = () => s3.held().filter((entry) => entry.request.includes(id));
    await waitFor('a part of the muted file to be on its way', () => parts().length > 0, 20_000);
    await app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
    await app.waitForStatus(id, ['cancelled']);
    // Within the 10 s after which the SDK gives up on a held part: the worker did not wait for the
    // parts on their way (lib-storage's abort leaves a part already sent unanswered, not closed).
    await waitFor('the object to be gone', async () => (await s3.objectSize(id)) === null, 5_000);
  });
});

describe('with S3_RETRIEVAL=redirect', () => {
  let redirecting: TestService;

  beforeAll(async () => {
    redirecting = await startTestService({ storage: s3.settings({ retrieval: 'redirect', presignSeconds: 120 }), fileTtlSeconds: 60 });
  });

  afterAll(async () => {
    await redirecting?.stop();
  });

  test('when the file is asked for, then 302 to a presigned GET that expires with the token or sooner and names the file', async () => {
    const done = await completed({ url: source.file('/redirected.mp4', mediaPath('clip.mp4')), filename: 'été' }, redirecting);
    const res = await redirecting.http.getFile(done.token!);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location!);
    expect(location.origin).toBe(s3.endpoint);
    // The token lives 60 s: the presigned URL no longer than what is left of it, under the 120 s allowed.
    expect(Number(location.searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(60);
    expect(Number(location.searchParams.get('X-Amz-Expires'))).toBeGreaterThan(50);
    const fetched = await fetch(location);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent('été.mp4')}`);
    expect(sha256(Buffer.from(await fetched.arrayBuffer()))).toBe(done.file!.sha256);
  });

  test('when the object is gone, even just after a look at its download found it, then 410 rather than a redirect to nothing', async () => {
    const done = await completed({ url: source.file('/redirect-gone.mp4', mediaPath('clip.mp4')) }, redirecting);
    expect(((await redirecting.http.getDownload(done.id)).body as Download).status).toBe('completed');
    await s3.removeObject(done.id);
    const res = await redirecting.http.getFile(done.token!);
    expect(res.status).toBe(410);
  });
});

describe('cleanup', () => {
  let current: Service | undefined;

  afterAll(async () => {
    await current?.stop();
  });

  async function restart(overrides: Partial<Config> = {}): Promise<ReturnType<typeof createHttp>> {
    await (current ?? app.service).stop();
    current = await startService({ ...app.config, port: Number(new URL(app.service.url).port), ...overrides });
    return createHttp(current.url);
  }

  test('when a transfer was abandoned (its worker died, its download is gone), then a start aborts its upload and drops its record; an expired file leaves the bucket', async () => {
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
    const orphan = '3f1b8f0e-8a43-4a8e-9d2a-5c1f6f0b7a11';
    const upload = await client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: orphan }));
    const part = await client.send(
      new UploadPartCommand({ Bucket: s3.bucket, Key: orphan, UploadId: upload.UploadId, PartNumber: 1, Body: Buffer.alloc(1024) }),
    );
    client.destroy();
    const db = new pg.Client({ connectionString: app.config.databaseUrl });
    await db.connect();
    await db.query(`INSERT INTO transfers (download_id, upload_id, key, url, part_bytes) VALUES ($1, $2, $3, 'http://127.0.0.1/x.mp4', 8388608)`, [
      orphan,
      upload.UploadId,
      orphan,
    ]);
    await db.query(`INSERT INTO transfer_parts (download_id, number, etag, first_byte, bytes) VALUES ($1, 1, $2, 0, 1024)`, [orphan, part.ETag]);
    const due = await completed({ url: source.file('/due.mp4', mediaPath('clip.mp4')) });
    await db.query(`UPDATE downloads SET expires_at = now() - interval '1 second' WHERE id = $1`, [due.id]);
    expect(await s3.pendingUploads()).toContain(upload.UploadId);

    const http = await restart();
    expect(await s3.pendingUploads()).not.toContain(upload.UploadId);
    const { rows } = await db.query('SELECT 1 FROM transfers WHERE download_id = $1', [orphan]);
    expect(rows).toEqual([]);
    await db.end();
    expect(await s3.objectSize(due.id)).toBeNull();
    expect(((await http.getDownload(due.id)).body as Download).status).toBe('expired');
  });
});

describe('a bucket that cannot be used', () => {
  let broken: TestService;

  beforeAll(async () => {
    broken = await startTestService({ storage: s3.settings({ bucket: 'no-such-bucket' }), maxAttempts: 1 });
  });

  afterAll(async () => {
    await broken?.stop();
  });

  test('when the bucket does not exist, then /readyz answers 503 with the reason', async () => {
    const res = await broken.http.request('GET', '/readyz', '/readyz');
    expect(res.status).toBe(503);
    expect(bodyJson<{ detail: string }>(res).detail).toMatch(/S3 bucket no-such-bucket cannot be used: it does not exist/);
  });

  test('when a download cannot put its file, then it fails with an error naming the bucket, and nothing says completed', async () => {
    const created = await broken.http.createDownload({ url: source.file('/nowhere.mp4', mediaPath('clip.mp4')) });
    const failed = await broken.waitForStatus((created.body as Download).id, ['failed']);
    expect(failed.error).toMatchObject({ code: 'internal_error', retryable: true });
    expect(failed.error!.message).toMatch(/S3 bucket no-such-bucket/);
    expect(failed.file).toBeNull();
  });
});

test("when the bucket's server is down, then /readyz answers 503 within seconds", async () => {
  const down = await startTestService({ storage: s3.settings({ endpoint: 'http://127.0.0.1:9' }) });
  try {
    const started = Date.now();
    const res = await down.http.request('GET', '/readyz', '/readyz');
    expect(res.status).toBe(503);
    expect(bodyJson<{ detail: string }>(res).detail).toMatch(/S3 bucket downloads cannot be used/);
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    await down.stop();
  }
});

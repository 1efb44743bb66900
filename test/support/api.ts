import type { EventEmitter } from 'node:events';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import supertest, { type Response, type Test } from 'supertest';
import type { components } from '../../generated/api.ts';
import { loadConfig, type Config } from '../../src/config/index.ts';
import { startService, type Service } from '../../src/service.ts';
import { createTestDatabase } from './database.ts';
import { expectMatchesSpec } from './openapi.ts';

export type Download = components['schemas']['Download'];
export type DownloadStatus = components['schemas']['DownloadStatus'];
type Headers = Record<string, string>;

/** A file response: the body is always the raw bytes, also for a problem+json error. */
export type FileResponse = Response & { body: Buffer };

export type RequestOptions = {
  headers?: Headers;
  /** An object is sent as JSON; a string or Buffer as it is (set Content-Type yourself). */
  body?: unknown;
  /** Collect the body as a Buffer whatever its type, as for files. */
  binary?: boolean;
};

export type TestHttp = {
  /** An object is sent as JSON; a string is sent as it is, labelled JSON unless `headers` say otherwise. */
  createDownload(body: unknown, headers?: Headers): Promise<Response>;
  getDownload(id: string, headers?: Headers): Promise<Response>;
  /** Accepts a token, a `download_url` of this service, or a path under the service URL. */
  getFile(tokenOrUrl: string, headers?: Headers): Promise<FileResponse>;
  headFile(tokenOrUrl: string, headers?: Headers): Promise<Response>;
  /** Any request, still checked against the operation that `pathTemplate` names. */
  request(method: string, path: string, pathTemplate: string, options?: RequestOptions): Promise<Response>;
};

export type TestService = {
  service: Service;
  config: Config;
  http: TestHttp;
  /** Polls GET /downloads/{id} until its status is one of `statuses`; returns that download. */
  waitForStatus(id: string, statuses: DownloadStatus[], timeoutMs?: number): Promise<Download>;
  stop(): Promise<void>;
};

// superagent hands a parser the raw Node response stream.
function collectBytes(res: EventEmitter, done: (error: Error | null, body?: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
  res.on('error', (error) => done(error));
}

/** The JSON of a response whose body may have been collected as bytes. */
export function bodyJson<T = unknown>(res: Response): T {
  return (Buffer.isBuffer(res.body) ? JSON.parse(res.body.toString('utf8')) : res.body) as T;
}

export function createHttp(baseUrl: string): TestHttp {
  const agent = supertest(baseUrl);

  async function send(method: string, requestPath: string, pathTemplate: string, options: RequestOptions = {}): Promise<Response> {
    const verb = method.toLowerCase() as 'get';
    if (typeof agent[verb] !== 'function') throw new Error(`unsupported method ${method}`);
    // Redirects are part of what is being tested, so none is followed silently.
    let test: Test = agent[verb](requestPath).redirects(0);
    for (const [name, value] of Object.entries(options.headers ?? {})) test = test.set(name, value);
    if (options.binary) test = test.buffer(true).parse(collectBytes);
    if (options.body !== undefined) test = test.send(options.body as string | object);
    const res = await test;
    expectMatchesSpec(res, pathTemplate);
    return res;
  }

  function filePath(tokenOrUrl: string): string {
    if (/^https?:\/\//i.test(tokenOrUrl)) {
      // Only this service is ever contacted: a download_url built from another PUBLIC_BASE_URL is
      // a mistake in the test, not a request to send elsewhere.
      if (!tokenOrUrl.startsWith(`${baseUrl}/`)) throw new Error(`${tokenOrUrl} is not under the service URL ${baseUrl}; pass the token instead`);
      return tokenOrUrl.slice(baseUrl.length);
    }
    return tokenOrUrl.startsWith('/') ? tokenOrUrl : `/download/${encodeURIComponent(tokenOrUrl)}`;
  }

  return {
    createDownload: (body, headers = {}) => {
      // superagent would label a bare string as a form; here a string is JSON text, perhaps broken.
      const typed = typeof body !== 'string' || Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
      return send('POST', '/downloads', '/downloads', { body, headers: typed ? headers : { ...headers, 'Content-Type': 'application/json' } });
    },
    getDownload: (id, headers) => send('GET', `/downloads/${encodeURIComponent(id)}`, '/downloads/{download_uuid}', { headers }),
    getFile: async (tokenOrUrl, headers) => await send('GET', filePath(tokenOrUrl), '/download/{token}', { headers, binary: true }),
    headFile: (tokenOrUrl, headers) => send('HEAD', filePath(tokenOrUrl), '/download/{token}', { headers }),
    request: send,
  };
}

// Where a wanted status can still come from a status that is not wanted; anything else ends the wait.
const laterStatuses: Record<DownloadStatus, DownloadStatus[]> = {
  queued: ['downloading', 'processing', 'completed', 'failed', 'cancelled', 'expired'],
  downloading: ['queued', 'processing', 'completed', 'failed', 'cancelled', 'expired'],
  processing: ['queued', 'completed', 'failed', 'cancelled', 'expired'],
  completed: ['expired'],
  failed: [],
  cancelled: [],
  expired: [],
};

export async function pollStatus(http: TestHttp, id: string, statuses: DownloadStatus[], timeoutMs: number): Promise<Download> {
  const deadline = Date.now() + timeoutMs;
  let last: Download | undefined;
  for (;;) {
    const res = await http.getDownload(id);
    if (res.status !== 200) throw new Error(`GET /downloads/${id} answered ${res.status}: ${JSON.stringify(res.body)}`);
    last = res.body as Download;
    if (statuses.includes(last.status)) return last;
    if (!laterStatuses[last.status].some((status) => statuses.includes(status))) {
      throw new Error(`download ${id} is ${last.status}, and can no longer become ${statuses.join(' or ')}:\n${JSON.stringify(last, null, 2)}`);
    }
    if (Date.now() >= deadline) {
      throw new Error(`download ${id} did not become ${statuses.join(' or ')} within ${timeoutMs} ms:\n${JSON.stringify(last, null, 2)}`);
    }
    await sleep(100);
  }
}

export async function makeDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-test-data-'));
  // An embedded database in it (databaseUrl: undefined) runs as the `postgres` user when root.
  await chmod(dir, 0o755);
  return dir;
}

/** Settings for tests: a free port of 127.0.0.1, private source addresses allowed, short retry delays, no rate limit. */
export function testConfig(databaseUrl: string, dataDir: string, overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({}),
    port: 0,
    host: '127.0.0.1',
    databaseUrl,
    dataDir,
    allowPrivateAddresses: true,
    retryDelaySeconds: 1,
    rateLimitPerMinute: 0,
    // Site extraction only where a test asks for it: elsewhere a page with nothing in it fails at
    // once, as it does on a server without yt-dlp.
    ytdlp: 'off',
    // Tests that read the log start a process of their own.
    logLevel: 'silent',
    ...overrides,
  };
}

/**
 * Runs the whole service (API and worker) on its own database and data dir, on a free port of
 * 127.0.0.1, with settings for tests: private source addresses allowed, short retry delays and no
 * rate limit. Pair with `await stop()` in afterAll.
 */
export async function startTestService(overrides: Partial<Config> = {}): Promise<TestService> {
  const database = await createTestDatabase();
  const dataDir = await makeDataDir();
  const cleanUp = async () => {
    await Promise.allSettled([database.drop(), rm(dataDir, { recursive: true, force: true })]).then((results) => {
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    });
  };
  const config = testConfig(database.url, dataDir, overrides);
  let service: Service;
  try {
    service = await startService(config);
  } catch (error) {
    await cleanUp().catch(() => {});
    throw error;
  }
  const http = createHttp(service.url);
  let stopped: Promise<void> | undefined;
  return {
    service,
    config,
    http,
    waitForStatus: (id, statuses, timeoutMs = 30_000) => pollStatus(http, id, statuses, timeoutMs),
    stop() {
      stopped ??= (async () => {
        try {
          await service.stop();
        } finally {
          await cleanUp();
        }
      })();
      return stopped;
    },
  };
}

/** Creates a download (a 202) and waits until it has completed or failed. */
export async function finishedDownload(app: TestService, body: Record<string, unknown>, timeoutMs = 60_000): Promise<Download> {
  const created = await app.http.createDownload(body);
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed', 'failed'], timeoutMs);
}

/** The same, for a download expected to complete. */
export async function completedDownload(app: TestService, body: Record<string, unknown>, timeoutMs = 60_000): Promise<Download> {
  const done = await finishedDownload(app, body, timeoutMs);
  expect(done).toMatchObject({ status: 'completed', error: null });
  return done;
}

/** A completed download's file, fetched through its download_url and written into `dir` under its id and extension, for ffmpeg to read. */
export async function savedFile(http: TestHttp, done: Download, dir: string): Promise<string> {
  const res = await http.getFile(done.download_url!);
  expect(res.status).toBe(200);
  const file = path.join(dir, `${done.id}.${done.file!.filename.split('.').pop()}`);
  await writeFile(file, res.body);
  return file;
}

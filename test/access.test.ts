import { startTestService, type Download, type TestService } from './support/api.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';

let source: FixtureServer;
let clipUrl: string;

beforeAll(async () => {
  source = await startFixtureServer();
  clipUrl = source.file('/clip.mp4', mediaPath('clip.mp4'));
});

afterAll(async () => {
  await source?.close();
});

describe('API keys', () => {
  let app: TestService;
  beforeAll(async () => {
    app = await startTestService({ apiKeys: ['first-key', 'second-key'] });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test.each([
    ['no Authorization header', {}],
    ['a wrong key', { Authorization: 'Bearer not-a-key' }],
    ['a key that is a prefix of a real one', { Authorization: 'Bearer first' }],
    ['another scheme', { Authorization: 'Basic Zmlyc3Qta2V5Og==' }],
  ])('when a create comes with %s, then 401 with WWW-Authenticate', async (_case, headers) => {
    const res = await app.http.createDownload({ url: clipUrl }, headers);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  test('when a read comes without a key, then 401', async () => {
    const res = await app.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11');
    expect(res.status).toBe(401);
  });

  test.each(['OPTIONS', 'POST'])(
    'when %s /metrics comes without a key, then 401 problem with WWW-Authenticate, as GET does, and nothing about the route',
    async (method) => {
      const res = await fetch(`${app.service.url}/metrics`, { method });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.has('allow')).toBe(false);
      expect(((await res.json()) as { status: number }).status).toBe(401);
    },
  );

  test('when OPTIONS /metrics comes with a key, then it answers which methods there are', async () => {
    const res = await fetch(`${app.service.url}/metrics`, { method: 'OPTIONS', headers: { Authorization: 'Bearer first-key' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toMatch(/\bGET\b/);
  });

  test('when any configured key is used, then the download is created, and the file needs no key', async () => {
    const created = await app.http.createDownload({ url: clipUrl }, { Authorization: 'Bearer second-key' });
    expect(created.status).toBe(202);
    const id = (created.body as Download).id;
    let done: Download;
    for (;;) {
      // Read with the key that made it: another key's download is not found (tenancy.test.ts).
      const res = await app.http.getDownload(id, { Authorization: 'Bearer second-key' });
      done = res.body as Download;
      if (done.status === 'completed' || done.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(done.status).toBe('completed');
    const file = await app.http.getFile(done.token!);
    expect(file.status).toBe(200);
  });
});

describe('BASE_PATH', () => {
  let app: TestService;
  beforeAll(async () => {
    app = await startTestService({ basePath: '/api/v1' });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test('when a prefix is configured, then the operations, Location and download_url live under it', async () => {
    expect(app.service.url).toMatch(/\/api\/v1$/);
    const created = await app.http.createDownload({ url: clipUrl });
    expect(created.status).toBe(202);
    expect(created.headers.location).toBe(`/api/v1/downloads/${(created.body as Download).id}`);
    const done = await app.waitForStatus((created.body as Download).id, ['completed']);
    expect(done.download_url).toBe(`${app.service.url}/download/${done.token}`);
    expect((await app.http.getFile(done.download_url!)).status).toBe(200);
  });
});

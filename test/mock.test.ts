import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createClient, type Download } from '../src/client/index.ts';
import { checkResponse } from './support/openapi.ts';
import { unusedPort } from './support/ports.ts';
import { waitFor } from './support/waiting.ts';

// `npm run mock`: Prism serves the contract from openapi.yaml alone, so a consumer can build
// against it before any service runs. Its answers must hold to the same spec as the service's.

const root = fileURLToPath(new URL('..', import.meta.url));
let prism: ChildProcess;
let base: string;

beforeAll(async () => {
  const port = await unusedPort();
  base = `http://127.0.0.1:${port}`;
  // The script as `npm run mock` has it, on another port.
  prism = spawn('npm', ['run', '-s', 'mock'], { cwd: root, env: { ...process.env, MOCK_PORT: String(port) }, stdio: 'ignore', detached: true });
  await waitFor(
    'prism to answer',
    () =>
      fetch(`${base}/downloads`).then(
        () => true,
        () => false,
      ),
    45_000,
  );
});

afterAll(() => {
  // npm, the shell and prism are one process group.
  if (prism?.pid) process.kill(-prism.pid, 'SIGTERM');
});

async function post(body: unknown) {
  const res = await fetch(`${base}/downloads`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() };
}

test('when the mock gets a valid create, then it answers 202 with a download that the spec accepts', async () => {
  const res = await post({ url: 'https://media.example.com/clip.mp4' });
  expect(res.status).toBe(202);
  checkResponse({ method: 'POST', pathTemplate: '/downloads', status: res.status, headers: res.headers, body: res.body, hasBody: true });
  expect(res.body).toMatchObject({ status: 'queued' });
});

test('when the mock gets an invalid create, then it answers 400 with a problem', async () => {
  const res = await post({ url: 'ftp://media.example.com/clip.mp4' });
  expect(res.status).toBe(400);
  checkResponse({ method: 'POST', pathTemplate: '/downloads', status: res.status, headers: res.headers, body: res.body, hasBody: true });
});

test("when the SDK watches a download on the mock, then the spec's example stream takes it to completed, each event a Download the spec accepts", async () => {
  const seen: Download[] = [];
  for await (const download of createClient({ baseUrl: base }).watch('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11')) seen.push(download);
  expect(seen.map((download) => download.status)).toEqual(['downloading', 'completed']);
  for (const body of seen) {
    checkResponse({
      method: 'GET',
      pathTemplate: '/downloads/{download_uuid}',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body,
      hasBody: true,
    });
  }
});

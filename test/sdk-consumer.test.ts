import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';

// The SDK as another project gets it: a scratch project outside this repository that depends on
// the package by path, imports `video-download-service/client` from the compiled dist/, is
// type-checked by TypeScript against its declarations, and runs on plain Node.

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

const { app, source } = useService();
let project: string;

// dist/ is built once for the whole run, by the global setup.
beforeAll(async () => {
  project = await mkdtemp(path.join(os.tmpdir(), 'vds-consumer-'));
  await mkdir(path.join(project, 'node_modules'));
  await symlink(root, path.join(project, 'node_modules', 'video-download-service'), 'dir');
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await writeFile(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, lib: ['ES2022', 'DOM'], types: [], outDir: 'out' },
      files: ['consumer.ts'],
    }),
  );
});

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

function consumer(baseUrl: string, sourceUrl: string): string {
  return `import { createClient, ProblemError, type Collection, type Download } from 'video-download-service/client';

const vds = createClient({ baseUrl: ${JSON.stringify(baseUrl)} });
const created: Download = await vds.create({ url: ${JSON.stringify(sourceUrl)}, quality: 'best' });
const done = await vds.wait(created.id);
const page = await vds.list({ status: ['completed'], limit: 5 });
let missing = 0;
try {
  await vds.get('00000000-0000-4000-8000-000000000000');
} catch (error) {
  if (error instanceof ProblemError) missing = error.problem.status;
}
const batch: Collection = await vds.collections.wait((await vds.collections.create({ urls: [${JSON.stringify(sourceUrl)}] })).id);
const children: Download[] = await vds.collections.children(batch.id);
console.log(JSON.stringify({ status: done.status, sha256: done.file?.sha256, listed: page.items.some((d) => d.id === created.id), missing, batch: [batch.status, children[0]?.file?.sha256] }));
`;
}

async function typeCheck(source: string): Promise<{ ok: boolean; output: string }> {
  await writeFile(path.join(project, 'consumer.ts'), source);
  try {
    await run(process.execPath, [tsc, '-p', project], { cwd: project });
    return { ok: true, output: '' };
  } catch (error) {
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    return { ok: false, output: stdout + stderr };
  }
}

test('when a project outside the repository uses the SDK as documented, then it type-checks and runs on plain Node', async () => {
  const checked = await typeCheck(consumer(app.service.url, source.file('/consumer.mp4', mediaPath('clip.mp4'))));
  expect(checked).toEqual({ ok: true, output: '' });
  const { stdout } = await run(process.execPath, [path.join(project, 'out', 'consumer.js')], { cwd: project });
  const result = JSON.parse(stdout) as { status: string; sha256: string; listed: boolean; missing: number; batch: [string, string] };
  expect(result).toEqual({
    status: 'completed',
    sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    listed: true,
    missing: 404,
    batch: ['completed', result.sha256],
  });
}, 60_000);

test.each([
  ['a field of a response', (text: string) => text.replace('done.file?.sha256', 'done.file?.sha265'), /sha265/],
  ['a field of a request body', (text: string) => text.replace('{ url:', '{ urll:'), /urll/],
  ['a value outside an enum', (text: string) => text.replace("status: ['completed']", "status: ['complete']"), /complete/],
  ['a field of a collection', (text: string) => text.replace('batch.status', 'batch.state'), /state/],
])(
  'when the consumer gets %s wrong, then it fails to type-check, naming it',
  async (_kind, edit, named) => {
    const checked = await typeCheck(edit(consumer(app.service.url, source.url('/any.mp4'))));
    expect(checked.ok).toBe(false);
    expect(checked.output).toMatch(/error TS\d+/);
    expect(checked.output).toMatch(named);
  },
  60_000,
);

test("when the README's SDK example runs as written, with its addresses pointing here, then it follows the download and saves the file", async () => {
  const readme = await readFile(path.join(root, 'README.md'), 'utf8');
  const example = /## Use it from code[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toContain("from 'video-download-service/client'");
  const script = example!
    .replace('http://127.0.0.1:3000', app.service.url)
    .replace('https://media.example.com/clip.mp4', source.file('/clip.mp4', mediaPath('clip.mp4')))
    .replace('https://media.example.com/talk.mp4', source.file('/talk.mp4', mediaPath('talk.mp4')));
  await writeFile(path.join(project, 'example.mjs'), script);
  const { stdout } = await run(process.execPath, ['example.mjs'], { cwd: project });
  const original = await readFile(mediaPath('clip.mp4'));
  expect(stdout).toMatch(/^completed 100%$/m);
  expect(stdout).toContain(`saved clip.mp4 ${original.length} bytes`);
  expect((await readFile(path.join(project, 'clip.mp4'))).equals(original)).toBe(true);
  // The clip of 1:30 to 2:00, from the keyframe at 90 s (one every 5 s).
  expect(stdout).toMatch(/^\{ start_seconds: 90, end_seconds: 120 \} 30(\.\d+)?$/m);
}, 60_000);

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The breaking-change gate as CI runs it (`npm run spec:diff`): in a scratch git repository whose
// last release (a v* tag, or the previous commit) holds this project's openapi.yaml, and whose
// working tree holds an edited one; and in the histories CI may have: a shallow clone, a first commit.

const run = promisify(execFile);
const gate = fileURLToPath(new URL('../.ci/spec-diff.mjs', import.meta.url));
let spec: string;
const repos: string[] = [];

beforeAll(async () => {
  spec = await readFile(new URL('../openapi.yaml', import.meta.url), 'utf8');
});

afterAll(async () => {
  await Promise.all(repos.map((dir) => rm(dir, { recursive: true, force: true })));
});

const gitIn = (dir: string, ...args: string[]) => run('git', ['-c', 'user.name=test', '-c', 'user.email=test@127.0.0.1', ...args], { cwd: dir });

/** A repository whose history holds `released` (tagged v1.0.0 when `tag`), and `edited` in its working tree. */
async function repoWith(released: string, edited: string, { tag = true } = {}): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-spec-diff-'));
  repos.push(dir);
  const git = (...args: string[]) => gitIn(dir, ...args);
  await git('init', '-q');
  await writeFile(path.join(dir, 'openapi.yaml'), released);
  await git('add', 'openapi.yaml');
  await git('commit', '-qm', 'release');
  if (tag) await git('tag', 'v1.0.0');
  else await git('commit', '-q', '--allow-empty', '-m', 'a later commit');
  await writeFile(path.join(dir, 'openapi.yaml'), edited);
  return dir;
}

/** A shallow clone (depth 1, as CI checkouts often are) of `source` once its edit is committed. */
async function shallowCloneOf(source: string): Promise<string> {
  await gitIn(source, 'commit', '-qam', 'the edit');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-spec-diff-shallow-'));
  repos.push(dir);
  // file:// so that --depth applies to a local clone too.
  await run('git', ['clone', '-q', '--depth', '1', `file://${source}`, dir]);
  expect((await gitIn(dir, 'rev-parse', '--is-shallow-repository')).stdout.trim()).toBe('true');
  return dir;
}

async function gateIn(dir: string): Promise<{ passed: boolean; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [gate], { cwd: dir });
    return { passed: true, output: stdout + stderr };
  } catch (error) {
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    return { passed: false, output: stdout + stderr };
  }
}

function edit(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the spec no longer holds ${JSON.stringify(from)}: update this test`);
  return text.replace(from, to);
}

const removeSha256 = (text: string) =>
  edit(
    edit(
      text,
      'required: [filename, content_type, size_bytes, sha256, duration_seconds, width, height, audio_codec, video_codec, subtitles]',
      'required: [filename, content_type, size_bytes, duration_seconds, width, height, audio_codec, video_codec, subtitles]',
    ),
    "        sha256:\n          type: string\n          pattern: '^[0-9a-f]{64}$'\n",
    '',
  );
const createBody = '      required: [url]\n      properties:\n';
const addOptional = (text: string) => edit(text, createBody, `${createBody}        note:\n          type: string\n`);
const addRequired = (text: string) => edit(addOptional(text), '      required: [url]\n', '      required: [url, note]\n');
/** The contract's own version line, whatever it is now, with its major number raised. */
function raiseMajor(text: string): string {
  const [line, major] = /^ {2}version: (\d+)\.\d+\.\d+$/m.exec(text) ?? [];
  if (!line) throw new Error('the spec has no info.version line: update this test');
  return edit(text, line, `  version: ${Number(major) + 1}.0.0`);
}

test('when a response field is removed, then the gate fails and says why', async () => {
  const result = await gateIn(await repoWith(spec, removeSha256(spec)));
  expect(result.passed).toBe(false);
  expect(result.output).toContain('against the last release, v1.0.0');
  expect(result.output).toMatch(/sha256/);
  expect(result.output).toContain('breaking changes to the contract without a new major version');
});

test('when a request gains a required field, then the gate fails', async () => {
  const result = await gateIn(await repoWith(spec, addRequired(spec)));
  expect(result.passed).toBe(false);
  expect(result.output).toMatch(/cannot add a required request property 'note'/);
});

test('when a request gains an optional field, then the gate passes', async () => {
  const result = await gateIn(await repoWith(spec, addOptional(spec)));
  expect(result).toMatchObject({ passed: true, output: expect.stringContaining('no breaking change') });
});

test('when a breaking change comes with a new major version, then the gate passes and asks for the changelog', async () => {
  const result = await gateIn(await repoWith(spec, raiseMajor(removeSha256(spec))));
  expect(result).toMatchObject({ passed: true, output: expect.stringMatching(/a new major version \((\d+) -> (\d+)\): breaking changes are allowed/) });
});

test('when there is no release tag, then the previous commit is the base', async () => {
  const result = await gateIn(await repoWith(spec, removeSha256(spec), { tag: false }));
  expect(result.passed).toBe(false);
  expect(result.output).toContain('against the previous commit');
});

test('when the clone is shallow, then the gate fetches the history and still finds the last release', async () => {
  const result = await gateIn(await shallowCloneOf(await repoWith(spec, removeSha256(spec))));
  expect(result.passed).toBe(false);
  expect(result.output).toContain('a shallow clone; fetching its history');
  expect(result.output).toContain('against the last release, v1.0.0');
  expect(result.output).toContain('breaking changes to the contract without a new major version');
});

test('when the clone is shallow and its history cannot be fetched, then the gate fails and says how to clone', async () => {
  const source = await repoWith(spec, addOptional(spec));
  const clone = await shallowCloneOf(source);
  await rm(source, { recursive: true, force: true });
  const result = await gateIn(clone);
  expect(result.passed).toBe(false);
  expect(result.output).toContain('a shallow clone whose history could not be fetched');
});

test('when the first commit is all there is, then there is nothing to compare with and the gate passes', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vds-spec-diff-first-'));
  repos.push(dir);
  await gitIn(dir, 'init', '-q');
  await writeFile(path.join(dir, 'openapi.yaml'), spec);
  await gitIn(dir, 'add', 'openapi.yaml');
  await gitIn(dir, 'commit', '-qm', 'the first commit');
  const result = await gateIn(dir);
  expect(result).toMatchObject({ passed: true, output: expect.stringContaining('the first commit, and no v* tag') });
});

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
// CreateDownload's, which the last release has: a schema added since could change freely.
const createBody = '    CreateDownload:\n      type: object\n      additionalProperties: false\n      required: [url]\n      properties:\n';
const addOptional = (text: string) => edit(text, createBody, `${createBody}        note:\n          type: string\n`);
const addRequired = (text: string) => edit(addOptional(text), `${createBody}        note:`, `${createBody.replace('[url]', '[url, note]')}        note:`);
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

// What Optic does not see (.ci/spec-rules.mjs): each edit below passed the gate while only Optic judged it.

/** Each line the gate must print for a breaking change: the JSON pointer of what changed, and what. */
function expectBreaks(result: { passed: boolean; output: string }, ...lines: string[]) {
  expect(result.passed).toBe(false);
  for (const line of lines) expect(result.output).toContain(line);
  expect(result.output).toContain('breaking changes to the contract without a new major version');
}

const filenameSchema = '          minLength: 1\n          maxLength: 200\n          description: Base name';
const narrowFilename = (text: string) => edit(text, filenameSchema, filenameSchema.replace('maxLength: 200', 'maxLength: 100'));

test('when a limit narrows what a client may send or widens what it reads, then the gate fails and says where', async () => {
  let edited = narrowFilename(spec);
  edited = edit(
    edited,
    '            minimum: 1\n            maximum: 100\n            default: 20',
    '            minimum: 5\n            maximum: 100\n            default: 20',
  );
  edited = edit(edited, '          maxLength: 500\n          description: The title', '          maxLength: 1000\n          description: The title');
  expectBreaks(
    await gateIn(await repoWith(spec, edited)),
    '/components/schemas/CreateDownload/properties/filename/maxLength: request limit narrowed: maxLength 200 -> 100 (POST /downloads request body',
    '/paths/~1downloads/get/parameters/1/schema/minimum: request parameter limit narrowed: minimum 1 -> 5 (GET /downloads parameter limit)',
    '/components/schemas/Source/properties/title/maxLength: response limit widened: maxLength 500 -> 1000 (GET /downloads response 200',
  );
});

test('when a request enum loses a value or a webhook enum gains one, then the gate fails', async () => {
  let edited = edit(
    spec,
    'enum: [queued, downloading, processing, completed, failed, cancelled, expired]',
    'enum: [queued, downloading, processing, completed, failed, cancelled]',
  );
  edited = edit(
    edited,
    'enum: [download.completed, download.failed, download.cancelled]',
    'enum: [download.completed, download.failed, download.cancelled, download.expired]',
  );
  expectBreaks(
    await gateIn(await repoWith(spec, edited)),
    '/components/schemas/DownloadStatus/enum: request parameter enum value "expired" removed (GET /downloads parameter status)',
    '/components/schemas/WebhookEvent/properties/type/enum: webhook payload enum value "download.expired" added (webhook downloadEnded (POST)',
  );
});

test('when a response loses a header or a media type, then the gate fails', async () => {
  let edited = edit(
    spec,
    '          headers:\n            Location:\n              description: Path of the created download.\n',
    '          headers:\n            X-Location:\n              description: Path of the created download.\n',
  );
  edited = edit(edited, '            text/event-stream:\n', '            text/x-event-stream:\n');
  expectBreaks(
    await gateIn(await repoWith(spec, edited)),
    '/paths/~1downloads/post/responses/202/headers/Location: response header removed: Location (POST /downloads response 202)',
    '/paths/~1downloads~1{download_uuid}/get/responses/200/content/text~1event-stream: response media type removed: text/event-stream (GET /downloads/{download_uuid} response 200)',
  );
});

test('when security asks more of a client, then the gate fails', async () => {
  let edited = edit(spec, 'security:\n  - {}\n  - bearerAuth: []\ntags:', 'security:\n  - bearerAuth: []\ntags:');
  edited = edit(
    edited,
    '      summary: Liveness\n      description: 200 while the process runs. Needs no key and counts against no limit.\n      security:\n        - {}\n',
    '      summary: Liveness\n      description: 200 while the process runs. Needs no key and counts against no limit.\n      security:\n        - bearerAuth: []\n',
  );
  edited = edit(
    edited,
    '    bearerAuth:\n      type: http\n      scheme: bearer\n',
    '    bearerAuth:\n      type: apiKey\n      name: X-API-Key\n      in: header\n',
  );
  expectBreaks(
    await gateIn(await repoWith(spec, edited)),
    '/security: security changed: a client with no credentials is no longer let in (every operation without its own security)',
    '/paths/~1healthz/get/security: security changed: a client with no credentials is no longer let in (GET /healthz)',
    '/components/securitySchemes/bearerAuth/type: security scheme bearerAuth: type changed: "http" -> "apiKey"',
  );
});

test('when a webhook payload loses a field, an event or a header, or a field changes type, then the gate fails', async () => {
  let edited = edit(spec, 'required: [type, timestamp, data]', 'required: [type, data]');
  edited = edit(edited, '        timestamp:\n          type: string\n          format: date-time\n          description: When the download ended.\n', '');
  edited = edit(
    edited,
    'type: string\n          enum: [download.completed, download.failed, download.cancelled]',
    'type: [string, integer]\n          enum: [download.completed, download.failed]',
  );
  edited = edit(edited, '        - name: webhook-id\n', '        - name: webhook-message-id\n');
  expectBreaks(
    await gateIn(await repoWith(spec, edited)),
    '/components/schemas/WebhookEvent/properties/timestamp: webhook payload field removed: timestamp (webhook downloadEnded (POST)',
    '/components/schemas/WebhookEvent/properties/type/enum: webhook payload enum value "download.cancelled" removed: receivers waiting for it are no longer sent it',
    '/components/schemas/WebhookEvent/properties/type/type: webhook payload type changed: string -> string|integer',
    '/webhooks/downloadEnded/post/parameters/0: webhook header removed: webhook-id (webhook downloadEnded (POST))',
  );
});

test('when the webhook is gone, then the gate fails', async () => {
  const edited = spec.replace(/\nwebhooks:\n[\s\S]*?\ncomponents:/, '\ncomponents:');
  expect(edited).not.toContain('\nwebhooks:');
  expectBreaks(await gateIn(await repoWith(spec, edited)), '/webhooks/downloadEnded: webhook removed: downloadEnded');
});

test('when limits, enums, headers, media types and security only allow more, then the gate passes', async () => {
  // A request-only enum, so that a new value of it is an addition no client reads.
  const withPriority = (values: string) => edit(spec, createBody, `${createBody}        priority:\n          type: string\n          enum: [${values}]\n`);
  let edited = withPriority('low, normal, high');
  edited = edit(edited, filenameSchema, filenameSchema.replace('maxLength: 200', 'maxLength: 400'));
  edited = edit(edited, '          maxLength: 500\n          description: The title', '          maxLength: 300\n          description: The title');
  edited = edit(
    edited,
    '      required: [kind, extractor, title]\n      properties:\n',
    '      required: [kind, extractor, title]\n      properties:\n        site:\n          type: string\n',
  );
  edited = edit(
    edited,
    '          headers:\n            Location:\n',
    '          headers:\n            X-Request-Id:\n              schema:\n                type: string\n            Location:\n',
  );
  edited = edit(
    edited,
    '            text/event-stream:\n',
    '            application/x-ndjson:\n              schema:\n                type: string\n            text/event-stream:\n',
  );
  edited = edit(
    edited,
    "pattern: '^[hH][tT][tT][pP][sS]?://[^/?#\\s]'\n          maxLength: 2048\n          description: The video's URL",
    "pattern: '^[hH][tT][tT][pP][sS]?://[^/?#]'\n          maxLength: 2048\n          description: The video's URL",
  );
  const readiness = 'balancer sends requests elsewhere. Needs no key and counts against no limit.\n      security:\n        - {}\n';
  edited = edit(edited, readiness, `${readiness}        - bearerAuth: []\n`);
  const result = await gateIn(await repoWith(withPriority('low, normal'), edited));
  expect(result).toMatchObject({ passed: true, output: expect.stringContaining('no breaking change') });
  expect(result.output).toContain('to review by hand');
  expect(result.output).toContain('/components/schemas/CreateDownload/properties/url: request pattern changed');
});

test('when a breaking change Optic misses comes with a new major version, then the gate passes and lists it', async () => {
  const result = await gateIn(await repoWith(spec, raiseMajor(narrowFilename(spec))));
  expect(result).toMatchObject({ passed: true, output: expect.stringMatching(/a new major version \((\d+) -> (\d+)\): breaking changes are allowed/) });
  expect(result.output).toContain('request limit narrowed: maxLength 200 -> 100');
});

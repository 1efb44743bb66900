import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http, { type IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { startTestService, type Download, type TestService } from './support/api.ts';
import {
  anyText,
  codePoints,
  contract,
  deepestWithin,
  edited,
  headerText,
  insertedAnywhere,
  invalidFilename,
  invalidQuality,
  invalidUrls,
  isJson,
  nestedJson,
  shallowestOver,
  unknownField,
  validCreateBody,
  type CreateBody,
  type Nesting,
} from './support/arbitraries.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { checkResponse } from './support/openapi.ts';
import { unusedPort } from './support/ports.ts';
import { rawHead } from './support/raw-head.ts';

// Bad input is the client's mistake, so the answer is a 4xx problem document, whatever the input:
// never a 5xx, a hang or an HTML page. Valid input is generated alongside, so that a service that
// refused everything could not pass. Every response is also checked against openapi.yaml by the
// test client, so an undocumented status or shape fails the property too.

type Problem = { type: string; title: string; status: number; detail: string; errors?: { field: string; message: string }[] };

const API_KEY = 'property-test-key-6d1f0c';
const VALID_BODY_RUNS = 100;
const RUNS = 50;

let api: TestService;
let guarded: TestService;
let files: TestService;
let source: FixtureServer;
let token: string;
let original: Buffer;
let deadPort: number;

beforeAll(async () => {
  // The services that take generated bodies run no worker: a body wrongly accepted is never
  // fetched, so no generated host is ever contacted. Only `files` downloads, from the fixture.
  [api, guarded, files, source, deadPort] = await Promise.all([
    // Valid bodies may carry a callback_url, which a service takes only with a webhook secret.
    startTestService({ role: 'api', allowPrivateAddresses: true, rateLimitPerMinute: 0, webhookSecret: `whsec_${randomBytes(32).toString('base64')}` }),
    startTestService({ role: 'api', allowPrivateAddresses: false, rateLimitPerMinute: 0, apiKeys: [API_KEY] }),
    startTestService({ allowPrivateAddresses: true, rateLimitPerMinute: 0 }),
    startFixtureServer(),
    unusedPort(),
  ]);
  original = await readFile(mediaPath('clip.mp4'));
  const created = await files.http.createDownload({ url: source.file('/clip.mp4', mediaPath('clip.mp4')) });
  token = (await files.waitForStatus((created.body as Download).id, ['completed'])).token!;
});

afterAll(async () => {
  await source?.close();
  await Promise.all([api?.stop(), guarded?.stop(), files?.stop()]);
});

/** What the assertions read of a response: supertest's, or one sent without it. */
type Answer = { status: number; headers: IncomingHttpHeaders; text?: string; body?: unknown };

// A file response collects even a problem document as bytes.
const textOf = (res: Answer): string => (Buffer.isBuffer(res.body) ? res.body.toString('utf8') : (res.text ?? ''));

// fast-check prints a counterexample through JSON.stringify, which leaves C1 controls and the like
// invisible; the failure names what was sent with every such character spelled out.
const visible = (text: string) => text.replace(/[^\x20-\x7e]/gu, (char) => `\\u{${char.codePointAt(0)!.toString(16)}}`);

function expectStatus(answer: Answer, statuses: number[], sent = ''): void {
  if (!statuses.includes(answer.status)) {
    throw new Error(`${sent ? `${visible(sent)} ` : ''}answered ${answer.status} where ${statuses.join(' or ')} was due: ${textOf(answer).slice(0, 500)}`);
  }
}

/** Asserts one of `statuses` as an RFC 9457 problem document, and returns the document. `sent` only labels a failure. */
function expectProblem(answer: Answer, statuses: number[], sent = ''): Problem {
  expectStatus(answer, statuses, sent);
  const text = textOf(answer);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(text) as Problem;
  expect(problem).toEqual(expect.objectContaining({ type: expect.any(String), title: expect.any(String), status: answer.status, detail: expect.any(String) }));
  // Every 400 here is a validation failure, which names what was wrong.
  if (answer.status === 400) expect(problem.errors?.length).toBeGreaterThan(0);
  return problem;
}

/**
 * POST /downloads with every header value sent byte for byte as Latin-1. supertest cannot do that
 * once there is a body: Node then writes the head in the body's encoding, UTF-8, so that `\x80`
 * arrives as two characters and the server is asked something else than the test meant.
 */
function postLatin1(service: TestService, headers: Record<string, string>, body: object): Promise<Answer> {
  const payload = Buffer.from(JSON.stringify(body));
  const target = new URL(`${service.service.url}/downloads`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      target,
      { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': payload.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode!;
          try {
            checkResponse({ method: 'POST', pathTemplate: '/downloads', status, headers: res.headers, body: text, hasBody: text.length > 0 });
            resolve({ status, headers: res.headers, text });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const runProperty = <T>(arbitrary: fc.Arbitrary<T>, check: (value: T) => Promise<void>, numRuns = RUNS) =>
  fc.assert(fc.asyncProperty(arbitrary, check), { numRuns });

/** A request body, the headers that label it, and the statuses the contract allows for it. */
type BadBody = { text: string; headers?: Record<string, string>; statuses: number[] };

const invalid = (value: unknown): BadBody => ({ text: JSON.stringify(value), statuses: [400] });

/** Bad bodies by kind, so that each kind gets its own runs and its own counterexample. */
function badBodies(port: number): Record<string, fc.Arbitrary<BadBody>> {
  const base = validCreateBody(port);
  const withField = (field: keyof CreateBody, value: fc.Arbitrary<unknown>) => fc.tuple(base, value).map(([body, bad]) => invalid({ ...body, [field]: bad }));
  const bodyText = base.map((body) => JSON.stringify(body));
  const limit = contract.maxBodyBytes;
  const nesting = fc.constantFrom<Nesting>('array', 'object');
  return {
    'any JSON value but a create body': fc
      .jsonValue({ maxDepth: 4 })
      .filter((value) => !(typeof value === 'object' && value !== null && 'url' in value))
      .map(invalid),
    ...Object.fromEntries(
      (['url', 'callback_url'] as const).flatMap((field) =>
        Object.entries(invalidUrls(port)).map(([kind, value]) => [`a ${field} ${kind}`, withField(field, value)] as const),
      ),
    ),
    'a quality outside the enum and the height range': withField('quality', invalidQuality),
    'a filename that is empty, too long or not text': withField('filename', invalidFilename),
    'a field the contract does not define': fc.tuple(base, unknownField).map(([body, [name, value]]) => invalid({ ...body, [name]: value })),
    'a field wrapped in an object': fc
      .tuple(base, fc.constantFrom('url', 'quality', 'filename'), fc.jsonValue({ maxDepth: 2 }))
      .map(([body, field, junk]) => invalid({ ...body, [field]: { [field]: body[field as keyof CreateBody] ?? 'best', junk } })),
    'JSON cut short': bodyText.chain((text) => fc.nat({ max: text.length - 1 }).map((end) => ({ text: text.slice(0, end), statuses: [400] }))),
    'JSON broken by a character, raw controls included': bodyText
      .chain((text) => insertedAnywhere(text, fc.oneof(anyText({ minLength: 1, maxLength: 3 }), fc.constantFrom(',', '}', ']', '"', '\\', ':', '\u0000'))))
      .filter((text) => !isJson(text))
      .map((text) => ({ text, statuses: [400] })),
    'text that is not JSON': anyText({ minLength: 1 })
      .filter((text) => !isJson(text))
      .map((text) => ({ text, statuses: [400] })),
    // Deep nesting that still fits the size limit, in a field and as the whole body.
    'deep nesting within the size limit': fc.oneof(
      fc
        .tuple(base, nesting)
        .chain(([body, kind]) =>
          fc.integer({ min: 100, max: deepestWithin(limit - JSON.stringify(body).length - 20, kind) }).map((depth) => ({ body, kind, depth })),
        )
        .map(({ body, kind, depth }) => ({ text: `${JSON.stringify(body).slice(0, -1)},"junk":${nestedJson(depth, kind)}}`, statuses: [400] })),
      nesting.chain((kind) => fc.integer({ min: 100, max: deepestWithin(limit, kind) }).map((depth) => ({ text: nestedJson(depth, kind), statuses: [400] }))),
    ),
    'a body over the size limit': fc.oneof(
      fc
        .tuple(base, fc.integer({ min: limit + 1, max: limit * 4 }))
        .map(([body, size]) => ({ text: JSON.stringify({ ...body, filename: 'x'.repeat(size) }), statuses: [413] })),
      fc
        .tuple(bodyText, fc.integer({ min: 1, max: limit }))
        .map(([text, extra]) => ({ text: text + ' '.repeat(limit - text.length + extra), statuses: [413] })),
      nesting.chain((kind) =>
        fc.integer({ min: shallowestOver(limit, kind), max: limit }).map((depth) => ({ text: nestedJson(depth, kind), statuses: [413] })),
      ),
    ),
    'a valid body labelled as something else than JSON': fc
      .tuple(
        bodyText,
        fc.constantFrom(
          'text/plain',
          'text/json',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/octet-stream',
          'application/jsonl',
          'application/vnd.api+json',
          'application/json; charset=latin1',
          'video/mp4',
        ),
      )
      .map(([text, contentType]) => ({ text, headers: { 'Content-Type': contentType }, statuses: [415] })),
    // JSON between systems is UTF-8 (RFC 8259, 8.1): any other charset is refused, whatever the bytes.
    'a valid body labelled UTF-16': bodyText.map((text) => ({ text, headers: { 'Content-Type': 'application/json; charset=utf-16' }, statuses: [415] })),
    // Text is no gzip or deflate stream, and the rare text that is a brotli one decodes into no create body.
    'a plain body labelled with a Content-Encoding the service decodes': fc
      .tuple(fc.oneof(bodyText, anyText({ minLength: 1 })), fc.constantFrom('gzip', 'deflate', 'br', 'GZIP', 'Deflate', 'BR'))
      .map(([text, encoding]) => ({ text, headers: { 'Content-Encoding': encoding }, statuses: [400] })),
    'a body labelled with a Content-Encoding the service does not decode': fc
      .tuple(bodyText, fc.constantFrom('compress', 'x-gzip', 'zstd', 'gzip, br', 'identity, gzip', 'utf-8', '*'))
      .map(([text, encoding]) => ({ text, headers: { 'Content-Encoding': encoding }, statuses: [415] })),
  };
}

describe('POST /downloads with generated bodies', () => {
  test('when the body is valid by the schema, then 202 with the download as submitted', async () => {
    await runProperty(
      validCreateBody(deadPort),
      async (body) => {
        const res = await api.http.createDownload(JSON.stringify(body));
        expectStatus(res, [202], JSON.stringify(body));
        const download = res.body as Download;
        expect(res.headers.location).toBe(`/downloads/${download.id}`);
        expect(download).toMatchObject({ url: body.url, quality: body.quality ?? 'best', status: 'queued' });
      },
      VALID_BODY_RUNS,
    );
  });

  // The port is only known once the services run; the kinds themselves do not depend on it.
  test.each(Object.keys(badBodies(0)))('when POST /downloads gets %s, then a 4xx problem', async (kind) => {
    await runProperty(badBodies(deadPort)[kind]!, async ({ text, headers, statuses }) => {
      expectProblem(await api.http.createDownload(text, headers), statuses, `${JSON.stringify(headers ?? {})} ${text}`);
    });
  });
});

const privateHost = fc.oneof(
  fc.tuple(fc.constantFrom('127', '10'), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join('.')),
  fc.tuple(fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)).map((parts) => `172.${parts.join('.')}`),
  fc.tuple(fc.constantFrom('192.168', '169.254'), fc.nat(255), fc.nat(255)).map((parts) => parts.join('.')),
  fc.tuple(fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)).map((parts) => `100.${parts.join('.')}`),
  // The same loopback address spelled as a number, in hex, in octal, or embedded in IPv6.
  fc
    .integer({ min: 0x7f000000, max: 0x7fffffff })
    .chain((address) =>
      fc.constantFrom(
        String(address),
        `0x${address.toString(16)}`,
        `0${address.toString(8)}`,
        `[::ffff:${(address >>> 16).toString(16)}:${(address & 0xffff).toString(16)}]`,
      ),
    ),
  fc.constantFrom(
    '[::1]',
    '[::]',
    '0.0.0.0',
    '[fd00::1]',
    '[fe80::1]',
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::]',
    'localhost',
    'LOCALHOST.',
    'media.localhost',
    'intranet',
  ),
);

describe('POST /downloads to a private address, where those are not allowed', () => {
  test('when the URL names a private or loopback host in any spelling, then 400 naming the url', async () => {
    const bearer = { Authorization: `Bearer ${API_KEY}` };
    await runProperty(
      fc.tuple(fc.constantFrom('http', 'https'), privateHost, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }), fc.webPath()),
      async ([scheme, host, port, path]) => {
        const url = `${scheme}://${host}${port === undefined ? '' : `:${port}`}${path}`;
        const problem = expectProblem(await guarded.http.createDownload({ url }, bearer), [400], url);
        expect(problem.errors!.map((error) => error.field)).toContain('/body/url');
      },
    );
  });
});

describe('headers', () => {
  test('when Idempotency-Key is any value HTTP can carry, then 202 within the length limits and 400 outside them', async () => {
    // One body for every key, so that a key generated twice is a replay (202), never a conflict.
    const body = { url: `http://127.0.0.1:${deadPort}/idempotent.mp4` };
    await runProperty(
      fc.oneof(
        headerText({ maxLength: contract.idempotencyKeyMaxLength + 30 }),
        headerText({ minLength: contract.idempotencyKeyMaxLength - 5, maxLength: contract.idempotencyKeyMaxLength + 5 }),
        fc.constantFrom('', ' ', '\t'),
      ),
      async (key) => {
        const res = await postLatin1(api, { 'Idempotency-Key': key }, body);
        // HTTP drops the spaces and tabs around a field value before the server sees it.
        const length = codePoints(key.replace(/^[\t ]+|[\t ]+$/g, ''));
        if (length >= 1 && length <= contract.idempotencyKeyMaxLength) {
          expectStatus(res, [202], key);
        } else {
          const problem = expectProblem(res, [400], key);
          expect(problem.errors!.map((error) => error.field.toLowerCase())).toContain('/headers/idempotency-key');
        }
      },
    );
  });

  test('when Authorization is anything but the configured key, then 401 problem with WWW-Authenticate', async () => {
    const authorization = fc.oneof(
      headerText({ maxLength: 80 }).filter((value) => !value.includes(API_KEY)),
      fc
        .tuple(fc.constantFrom('Bearer ', 'bearer ', 'BEARER\t', 'Bearer  '), edited(API_KEY, fc.stringMatching(/^[\x21-\x7e]$/)))
        .map(([scheme, key]) => scheme + key),
      fc.tuple(fc.constantFrom('Basic ', 'Token ', 'Bearer', ''), fc.constant(API_KEY)).map(([scheme, key]) => scheme + key),
      fc.constantFrom(`Bearer ${API_KEY} ${API_KEY}`, `Bearer ${API_KEY},${API_KEY}`, 'Bearer', 'Bearer '),
    );
    await runProperty(fc.tuple(authorization, fc.boolean()), async ([value, create]) => {
      const headers = { Authorization: value };
      const res = create
        ? await guarded.http.createDownload({ url: `http://127.0.0.1:${deadPort}/clip.mp4` }, headers)
        : await guarded.http.getDownload('6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11', headers);
      expectProblem(res, [401], value);
      expect(res.headers['www-authenticate']).toBe('Bearer');
    });
  });
});

const UUID = /^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i;

describe('GET /downloads/{download_uuid} with generated ids', () => {
  test('when the id is any text, then 404 for a UUID nobody created and 400 for anything else', async () => {
    const id = fc.oneof(
      anyText({ minLength: 1, maxLength: 60 }),
      fc.constantFrom('.', '..', '%', '/', '?', '#', ' ', 'null', 'undefined'),
      fc.uuid(),
      fc.uuid().map((uuid) => uuid.toUpperCase()),
      fc.uuid().map((uuid) => `urn:uuid:${uuid}`),
      fc.uuid().map((uuid) => `{${uuid}}`),
      fc.uuid().map((uuid) => uuid.replaceAll('-', '')),
      fc.uuid().chain((uuid) => insertedAnywhere(uuid, anyText({ minLength: 1, maxLength: 2 }))),
    );
    await runProperty(id, async (value) => {
      const res = await api.http.getDownload(value);
      if (UUID.test(value)) expectProblem(res, [404], value);
      // ajv's "uuid" format also takes the URN form; refused or not found are both right for it.
      else if (/^urn:uuid:/i.test(value) && UUID.test(value.slice('urn:uuid:'.length))) expectProblem(res, [400, 404], value);
      else expectProblem(res, [400], value);
    });
  });
});

describe('GET and HEAD /download/{token} with generated tokens', () => {
  const tokenPath = (value: string) => `/download/${encodeURIComponent(value)}`;
  const expectedFor = (value: string) => (codePoints(value) > contract.tokenMaxLength ? 400 : 404);

  /** A token of the real shape, `<id in base64url>.<secret>`, for an id that was never issued. */
  const tokenShaped = fc
    .tuple(fc.uuid(), anyText({ maxLength: 50 }))
    .map(([uuid, secret]) => `${Buffer.from(uuid.replaceAll('-', ''), 'hex').toString('base64url')}.${secret}`);
  const alteredToken = () =>
    edited(token, fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.-]$/), anyText({ minLength: 1, maxLength: 2 }))).filter((value) => value.length > 0);
  const anyToken = () =>
    fc.oneof(
      anyText({ minLength: 1, maxLength: contract.tokenMaxLength + 40 }),
      fc.constantFrom('.', '..', '%', '/', '?', '#', ' ', '.'.repeat(contract.tokenMaxLength)),
      tokenShaped,
      alteredToken(),
      alteredToken(),
    );

  test('when GET names a token that was never issued or was altered, then 404, or 400 past the length limit', async () => {
    await runProperty(anyToken(), async (value) => {
      expectProblem(await files.http.getFile(tokenPath(value)), [expectedFor(value)], value);
    });
  });

  test('when HEAD names a token that was never issued or was altered, then the same status without a body', async () => {
    await runProperty(anyToken(), async (value) => {
      const res = await files.http.headFile(tokenPath(value));
      expectStatus(res, [expectedFor(value)], value);
      // Over a socket of its own: supertest never reads what follows the headers of a HEAD.
      const raw = await rawHead(files.service.url, tokenPath(value));
      expect([raw.status, raw.afterHeaders.toString('latin1')]).toEqual([expectedFor(value), '']);
    });
  });

  const rangeHeader = () => {
    const position = fc.oneof(
      fc.nat({ max: original.length * 2 }),
      fc.constantFrom(0, original.length - 1, original.length, Number.MAX_SAFE_INTEGER),
      fc.bigInt({ min: 0n, max: 10n ** 30n }),
    );
    const spec = fc.oneof(
      fc.tuple(position, position).map(([start, end]) => `${start}-${end}`),
      position.map((start) => `${start}-`),
      position.map((suffix) => `-${suffix}`),
    );
    const single = spec.map((range) => `bytes=${range}`);
    const odd = fc
      .tuple(
        fc.constantFrom('bytes=', 'BYTES=', 'bytes =', 'items=', 'bytes=-', ''),
        fc.array(spec, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(',', ', ', ';'),
      )
      .map(([unit, specs, separator]) => unit + specs.join(separator));
    // Mostly single byte ranges, so that 206 and 416 come up as often as 200.
    return fc.oneof({ arbitrary: single, weight: 3 }, { arbitrary: odd, weight: 1 }, { arbitrary: headerText({ maxLength: 60 }), weight: 1 });
  };

  test('when GET on a real token carries any Range, then 200, 206 with those bytes, or 416', async () => {
    await runProperty(rangeHeader(), async (range) => {
      const res = await files.http.getFile(token, { Range: range });
      expectStatus(res, [200, 206, 416], range);
      if (res.status === 200) expect(res.body.equals(original)).toBe(true);
      if (res.status === 206) {
        const [, start, end, size] = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers['content-range'] ?? '') ?? [];
        expect(Number(size)).toBe(original.length);
        expect(res.body.equals(original.subarray(Number(start), Number(end) + 1))).toBe(true);
      }
      if (res.status === 416) {
        expectProblem(res, [416]);
        expect(res.headers['content-range']).toBe(`bytes */${original.length}`);
      }
    });
  });

  test('when HEAD on a real token carries any Range, then 200, 206 or 416', async () => {
    await runProperty(rangeHeader(), async (range) => {
      const res = await files.http.headFile(token, { Range: range });
      expectStatus(res, [200, 206, 416], range);
    });
  });
});

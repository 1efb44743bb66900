import { checkResponse } from './support/openapi.ts';
import { useService } from './support/harness.ts';

// Every operation that takes a body (openapi.yaml) holds it to one rule: JSON labelled so, in UTF-8
// (RFC 8259, 8.1), an object; a body refused is counted under its operation in /metrics.

type Problem = { status: number; detail: string; errors?: { field: string; message: string }[] };

const { app } = useService({ role: 'api' });

const SUBSCRIPTION = '6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11';
const VALID = { url: 'http://127.0.0.1:9/clip.mp4' };

/** The operations that take a body, each with a path to send it to. */
const operations = [
  { id: 'createDownload', method: 'POST', path: '/downloads', template: '/downloads' },
  { id: 'createCollection', method: 'POST', path: '/collections', template: '/collections' },
  { id: 'previewCollection', method: 'POST', path: '/collections/preview', template: '/collections/preview' },
  { id: 'createSubscription', method: 'POST', path: '/subscriptions', template: '/subscriptions' },
  { id: 'updateSubscription', method: 'PATCH', path: `/subscriptions/${SUBSCRIPTION}`, template: '/subscriptions/{subscription_id}' },
];
type Operation = (typeof operations)[number];

/** `body` sent byte for byte: the test client would send a Buffer labelled JSON as JSON text. */
async function send(operation: Operation, body: Buffer, headers: Record<string, string>): Promise<{ status: number; problem: Problem }> {
  const res = await fetch(`${app.service.url}${operation.path}`, { method: operation.method, headers, body });
  const text = await res.text();
  checkResponse({
    method: operation.method,
    pathTemplate: operation.template,
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: text,
    hasBody: true,
  });
  return { status: res.status, problem: JSON.parse(text) as Problem };
}

async function countOf(operation: string, status: number): Promise<number> {
  const res = await app.http.request('GET', '/metrics', '/metrics');
  const line = new RegExp(`^vds_http_request_duration_seconds_count\\{operation="${operation}",status="${status}"\\} (\\d+)$`, 'm').exec(res.text);
  return Number(line?.[1] ?? 0);
}

/** What the service holds: a body refused creates nothing. */
async function held(): Promise<number[]> {
  const lists = ['/downloads', '/collections', '/subscriptions'].map((path) => app.http.request('GET', path, path));
  return (await Promise.all(lists)).map((res) => (res.body as { items: unknown[] }).items.length);
}

const utf16 = (value: unknown) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(value), 'utf16le')]);

describe.each(operations)('$method $path', (operation) => {
  test.each([
    ['utf-16', utf16(VALID)],
    ['UTF-16LE', Buffer.from(JSON.stringify(VALID), 'utf16le')],
    ['utf-32', Buffer.from(JSON.stringify(VALID))],
    ['iso-8859-1', Buffer.from(JSON.stringify(VALID))],
  ])('when the body is labelled charset=%s, then 415 naming that charset, counted under the operation, and nothing is created', async (charset, body) => {
    const [before, counted] = await Promise.all([held(), countOf(operation.id, 415)]);
    const { status, problem } = await send(operation, body, { 'Content-Type': `application/json; charset=${charset}` });
    expect(status).toBe(415);
    expect(problem.detail).toContain(charset.toLowerCase());
    expect(problem.detail).toMatch(/UTF-8/);
    expect(await held()).toEqual(before);
    expect(await countOf(operation.id, 415)).toBe(counted + 1);
  });

  test('when the body is labelled charset=UTF-8, then it is read as any JSON body is', async () => {
    const { status, problem } = await send(operation, Buffer.from('null'), { 'Content-Type': 'application/json; charset="UTF-8"' });
    expect({ status, detail: problem.detail }).toEqual({ status: 400, detail: expect.stringMatching(/null; a JSON object is expected/) });
  });

  test.each([
    ['null', 'null'],
    [' 42', 'a number'],
    ['"text"', 'a string'],
  ])('when the body is %s, then 400 that says an object is expected, counted under the operation', async (body, kind) => {
    const counted = await countOf(operation.id, 400);
    const { status, problem } = await send(operation, Buffer.from(body), { 'Content-Type': 'application/json' });
    expect(status).toBe(400);
    expect(problem.detail).toBe(`The request body is ${kind}; a JSON object is expected.`);
    expect(problem.errors).toEqual([{ field: '/body', message: 'must be object' }]);
    expect(await countOf(operation.id, 400)).toBe(counted + 1);
  });

  test.each([
    ['a body', Buffer.from(JSON.stringify(VALID))],
    ['no body', Buffer.alloc(0)],
  ])('when %s comes without Content-Type, then 415 that says none was given', async (_case, body) => {
    const { status, problem } = await send(operation, body, {});
    expect(status).toBe(415);
    expect(problem.detail).toMatch(/no Content-Type/);
  });

  test('when the body comes in a Content-Encoding the service does not decode, then 415 counted under the operation', async () => {
    const counted = await countOf(operation.id, 415);
    const { status } = await send(operation, Buffer.from('{}'), { 'Content-Type': 'application/json', 'Content-Encoding': 'zstd' });
    expect(status).toBe(415);
    expect(await countOf(operation.id, 415)).toBe(counted + 1);
  });
});

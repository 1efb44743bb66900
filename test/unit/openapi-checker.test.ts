import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { checkResponse, createSpecChecker, SpecMismatchError, type ObservedResponse } from '../support/openapi.ts';

type Examples = Record<'QueuedDownload' | 'CompletedDownload' | 'FailedDownload', { value: Record<string, unknown> }>;
const spec = parseYaml(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { components: { examples: Examples } };
const examples = spec.components.examples;

const json = { 'content-type': 'application/json; charset=utf-8' };
const problem = { 'content-type': 'application/problem+json; charset=utf-8' };

function getDownload(status: number, body: unknown, headers: ObservedResponse['headers'] = json): ObservedResponse {
  return { method: 'GET', pathTemplate: '/downloads/{download_uuid}', status, headers, body, hasBody: body !== undefined };
}

describe('openapi checker', () => {
  test('when each Download example of the spec is the 200 of GET /downloads/{download_uuid}, then it passes', () => {
    for (const name of ['QueuedDownload', 'CompletedDownload', 'FailedDownload'] as const) {
      expect(() => checkResponse(getDownload(200, examples[name].value))).not.toThrow();
    }
  });

  test('when the body arrives as raw JSON text or bytes, then it is parsed before it is checked', () => {
    const text = JSON.stringify(examples.QueuedDownload.value);
    expect(() => checkResponse(getDownload(200, text))).not.toThrow();
    expect(() => checkResponse(getDownload(200, Buffer.from(text)))).not.toThrow();
    expect(() => checkResponse(getDownload(200, '{not json'))).toThrow(/not valid JSON/);
  });

  test('when a Download has a wrong value, a missing field and an extra field, then all three are named', () => {
    const { attempts, ...withoutAttempts } = examples.QueuedDownload.value;
    expect(attempts).toBe(0);
    const wrong = { ...withoutAttempts, status: 'done', surprise: true };
    expect(() => checkResponse(getDownload(200, wrong))).toThrow(SpecMismatchError);
    const message = captureMessage(() => checkResponse(getDownload(200, wrong)));
    expect(message).toContain('GET /downloads/{download_uuid} answered 200');
    expect(message).toMatch(/body\/status must be equal to one of the allowed values/);
    expect(message).toMatch(/must have required property 'attempts'/);
    expect(message).toMatch(/must NOT have additional properties \(surprise\)/);
  });

  test('when a nested value breaks a format or pattern, then its path is named', () => {
    const completed = examples.CompletedDownload.value as { file: Record<string, unknown> };
    const bad = { ...completed, created_at: 'yesterday', file: { ...completed.file, sha256: 'ABC' } };
    const message = captureMessage(() => checkResponse(getDownload(200, bad)));
    expect(message).toMatch(/body\/created_at must match format "date-time"/);
    expect(message).toMatch(/body\/file\/sha256 must match pattern/);
  });

  test('when the status is not documented for the operation, then it fails and lists the documented ones', () => {
    const message = captureMessage(() => checkResponse(getDownload(418, { title: 'teapot' }, problem)));
    expect(message).toMatch(/answered 418 .*does not document/);
    expect(message).toContain('200, 400, 401, 404, 429, 500');
    expect(() => checkResponse({ ...getDownload(200, examples.QueuedDownload.value), method: 'POST', pathTemplate: '/downloads', status: 200 })).toThrow(
      /answered 200/,
    );
  });

  test('when the media type is not documented, then it fails; when a problem document is right, then it passes', () => {
    const notFound = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No download with that id.' };
    expect(() => checkResponse(getDownload(404, '<html>Not Found</html>', { 'content-type': 'text/html' }))).toThrow(
      /media type text\/html is not documented; documented: application\/problem\+json/,
    );
    expect(() => checkResponse(getDownload(404, notFound, json))).toThrow(/media type application\/json is not documented/);
    expect(() => checkResponse(getDownload(404, notFound, problem))).not.toThrow();
    expect(() => checkResponse(getDownload(404, { ...notFound, status: '404' }, problem))).toThrow(/body\/status must be integer/);
  });

  test('when a file answer carries documented headers, then their values are checked and a HEAD needs no body', () => {
    const file = (method: string, status: number, headers: ObservedResponse['headers']): ObservedResponse => ({
      method,
      pathTemplate: '/download/{token}',
      status,
      headers,
      body: method === 'HEAD' ? undefined : Buffer.from('....ftyp'),
      hasBody: method !== 'HEAD',
    });
    const good = { 'content-type': 'video/mp4', 'content-length': '8', 'accept-ranges': 'bytes', etag: '"abc"' };
    expect(() => checkResponse(file('GET', 200, good))).not.toThrow();
    expect(() => checkResponse(file('HEAD', 200, good))).not.toThrow();
    expect(() => checkResponse(file('GET', 200, { ...good, 'accept-ranges': 'none' }))).toThrow(/header Accept-Ranges: "none" must be equal to constant/);
    expect(() => checkResponse(file('GET', 200, { ...good, 'content-length': 'eight' }))).toThrow(/header Content-Length: "eight" must be integer/);
    expect(() => checkResponse(file('GET', 200, { ...good, 'content-type': 'text/plain' }))).toThrow(/media type text\/plain is not documented/);
    expect(() => checkResponse({ ...file('GET', 304, { etag: '"abc"' }), hasBody: true })).toThrow(/has a body, but the spec documents none/);
  });

  test('when a header is marked required, then its absence fails', () => {
    const check = createSpecChecker({
      openapi: '3.1.0',
      info: { title: 'mini', version: '1' },
      paths: {
        '/things': {
          get: {
            responses: {
              '200': {
                description: 'ok',
                headers: { 'X-Request-Id': { required: true, schema: { type: 'string', minLength: 1 } } },
                content: { 'application/json': { schema: { type: 'object' } } },
              },
            },
          },
        },
      },
    });
    const observed: ObservedResponse = { method: 'GET', pathTemplate: '/things', status: 200, headers: json, body: {}, hasBody: true };
    expect(() => check(observed)).toThrow(/required header X-Request-Id is missing/);
    expect(() => check({ ...observed, headers: { ...json, 'x-request-id': 'r1' } })).not.toThrow();
  });
});

function captureMessage(run: () => void): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a SpecMismatchError');
}

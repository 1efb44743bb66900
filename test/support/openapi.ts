import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import type { Response } from 'supertest';
import { parse as parseYaml } from 'yaml';

// Checks what the service really sent against openapi.yaml, independently of the validator the
// service itself runs: a response that slips past the service's own checks still fails a test.

export type ObservedResponse = {
  method: string;
  /** A key of `paths`, e.g. `/downloads/{download_uuid}` (without any BASE_PATH). */
  pathTemplate: string;
  status: number;
  /** Lower-case names, as Node reports them. */
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, raw text or bytes. */
  body?: unknown;
  hasBody: boolean;
};

export class SpecMismatchError extends Error {
  override name = 'SpecMismatchError';
}

type Node = Record<string, unknown>;

const specFile = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
const specId = 'https://openapi.invalid/openapi.yaml';
// ajv-formats is CommonJS with a `default` property; which of the two an ESM import yields
// depends on the loader (Node, Jest, tsx), so accept both.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => void;

export type SpecChecker = (observed: ObservedResponse) => void;

/** A checker for any OpenAPI 3.1 document; `checkResponse` is the one for openapi.yaml. */
export function createSpecChecker(document: object): SpecChecker {
  const spec = structuredClone(document) as Node;
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  // OpenAPI's own annotations inside schemas, and the document's top-level fields: Ajv compiles
  // the whole document once (as a schema that checks nothing) when a reference points into it.
  ajv.addVocabulary([...new Set(['example', 'xml', 'externalDocs', ...Object.keys(spec).filter((key) => !key.startsWith('$'))])]);
  addFormats(ajv);
  // Added whole so that `#/components/...` references resolve exactly as the spec wrote them.
  ajv.addSchema({ ...spec, $id: specId });
  return (observed) => check(spec, ajv, observed);
}

let projectChecker: SpecChecker | undefined;

/** Throws a SpecMismatchError listing every way `observed` departs from openapi.yaml. */
export function checkResponse(observed: ObservedResponse): void {
  projectChecker ??= createSpecChecker(parseYaml(readFileSync(specFile, 'utf8')) as object);
  projectChecker(observed);
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lookup(spec: Node, pointer: string[]): unknown {
  let here: unknown = spec;
  for (const segment of pointer) here = isNode(here) ? here[segment] : undefined;
  return here;
}

/** Follows local `$ref`s; returns the object and where it really lives, for Ajv to compile there. */
function deref(spec: Node, value: unknown, pointer: string[]): { node: Node; pointer: string[] } {
  let node = value;
  let at = pointer;
  for (let hops = 0; isNode(node) && typeof node.$ref === 'string'; hops++) {
    if (hops > 20 || !node.$ref.startsWith('#/')) throw new Error(`cannot follow $ref ${node.$ref} in the spec`);
    at = node.$ref
      .slice(2)
      .split('/')
      .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
    node = lookup(spec, at);
  }
  if (!isNode(node)) throw new Error(`the spec has nothing at ${pointerText(at)}`);
  return { node, pointer: at };
}

function pointerText(pointer: string[], encode: (segment: string) => string = (segment) => segment): string {
  return `#/${pointer.map((segment) => encode(segment.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
}

function validatorAt(ajv: Ajv2020, pointer: string[]): ValidateFunction {
  const validate = ajv.getSchema(`${specId}${pointerText(pointer, encodeURIComponent)}`);
  if (!validate) throw new Error(`the spec has no schema at ${pointerText(pointer)}`);
  return validate;
}

function describeErrors(errors: ErrorObject[] | null | undefined, root: string): string[] {
  return (errors ?? []).map((error) => {
    const params =
      error.keyword === 'additionalProperties'
        ? ` (${String(error.params.additionalProperty)})`
        : error.keyword === 'enum'
          ? ` (${(error.params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')})`
          : error.keyword === 'const'
            ? ` (${JSON.stringify(error.params.allowedValue)})`
            : '';
    return `${root}${error.instancePath} ${error.message ?? error.keyword}${params}`;
  });
}

function headerValue(raw: string, schema: unknown): unknown {
  // Headers arrive as text; numeric schemas describe the number the text spells.
  const type = isNode(schema) ? schema.type : undefined;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(raw.trim())) return Number(raw);
  return raw;
}

function isJsonMediaType(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

function matchMediaType(documented: string[], actual: string): string | undefined {
  return (
    documented.find((candidate) => candidate.toLowerCase() === actual) ??
    documented.find((candidate) => candidate.endsWith('/*') && actual.startsWith(candidate.slice(0, -1).toLowerCase())) ??
    documented.find((candidate) => candidate === '*/*')
  );
}

function parsedJson(body: unknown): { value: unknown } | { error: string } {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : undefined;
  if (text === undefined) return { value: body };
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: `the body is not valid JSON (${(error as Error).message})` };
  }
}

function excerpt(body: unknown): string {
  if (body === undefined) return '(no body)';
  const text = Buffer.isBuffer(body) ? `<${body.length} bytes>` : typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  return text.length > 1500 ? `${text.slice(0, 1500)}...` : text;
}

function check(spec: Node, ajv: Ajv2020, observed: ObservedResponse): void {
  const method = observed.method.toLowerCase();
  const operationName = `${observed.method.toUpperCase()} ${observed.pathTemplate}`;
  const paths = isNode(spec.paths) ? spec.paths : {};
  const pathItem = paths[observed.pathTemplate];
  if (!isNode(pathItem)) {
    throw new SpecMismatchError(`${observed.pathTemplate} is not a path of the spec (it has ${Object.keys(paths).join(', ')})`);
  }
  const operation = pathItem[method];
  if (!isNode(operation) || !isNode(operation.responses)) {
    throw new SpecMismatchError(`the spec documents no ${operationName}`);
  }
  const responses = operation.responses;
  const status = String(observed.status);
  const key = [status, `${status[0]}XX`, `${status[0]}xx`, 'default'].find((candidate) => candidate in responses);
  const contentType = [observed.headers['content-type']].flat()[0];
  const heading = `${operationName} answered ${observed.status}${contentType ? ` (${contentType})` : ''}`;
  if (!key) {
    throw new SpecMismatchError(
      `${heading}, a status the spec does not document for it (documented: ${Object.keys(responses).join(', ')})\nbody: ${excerpt(observed.body)}`,
    );
  }
  const { node: response, pointer } = deref(spec, responses[key], ['paths', observed.pathTemplate, method, 'responses', key]);
  const problems: string[] = [];

  for (const [name, declared] of Object.entries(isNode(response.headers) ? response.headers : {})) {
    // OpenAPI says a Content-Type entry under headers is ignored; the media types govern it.
    if (name.toLowerCase() === 'content-type') continue;
    const { node: header, pointer: headerPointer } = deref(spec, declared, [...pointer, 'headers', name]);
    const raw = observed.headers[name.toLowerCase()];
    if (raw === undefined) {
      if (header.required === true) problems.push(`required header ${name} is missing`);
      continue;
    }
    if (!isNode(header.schema)) continue;
    const validate = validatorAt(ajv, [...headerPointer, 'schema']);
    for (const value of [raw].flat()) {
      if (!validate(headerValue(value, header.schema))) problems.push(...describeErrors(validate.errors, `header ${name}: "${value}"`));
    }
  }

  const content = isNode(response.content) ? response.content : {};
  const documented = Object.keys(content);
  // A HEAD answer carries the headers of the GET it stands for but never a body to check.
  if (method !== 'head') {
    if (documented.length === 0) {
      if (observed.hasBody) problems.push(`it has a body${contentType ? ` of ${contentType}` : ''}, but the spec documents none`);
    } else if (!contentType) {
      problems.push(`it has no Content-Type; documented: ${documented.join(', ')}`);
    } else {
      const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
      const match = matchMediaType(documented, mediaType);
      if (!match) {
        problems.push(`media type ${mediaType} is not documented; documented: ${documented.join(', ')}`);
      } else if (isJsonMediaType(mediaType) && isNode(content[match]) && 'schema' in content[match]) {
        const json = observed.hasBody ? parsedJson(observed.body) : { error: 'the body is empty' };
        if ('error' in json) {
          problems.push(json.error);
        } else {
          const validate = validatorAt(ajv, [...pointer, 'content', match, 'schema']);
          if (!validate(json.value)) problems.push(...describeErrors(validate.errors, 'body'));
        }
      }
    }
  }

  if (problems.length > 0) {
    throw new SpecMismatchError(
      `${heading}, which does not match the spec (${pointerText(pointer)}):\n${problems.map((problem) => `  - ${problem}`).join('\n')}\nbody: ${excerpt(observed.body)}`,
    );
  }
}

function templateMatcher(pathTemplate: string): RegExp {
  const pattern = pathTemplate
    .split(/\{[^}]+\}/)
    .map((literal) => literal.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  // Any prefix is allowed: the service may run under a BASE_PATH.
  return new RegExp(`${pattern}$`);
}

/** Checks a supertest response against the operation `pathTemplate` documents. */
export function expectMatchesSpec(res: Response, pathTemplate: string): void {
  const request = (res as Response & { req?: { method?: string; path?: string } }).req;
  const method = request?.method ?? (res.request as { method?: string } | undefined)?.method;
  if (!method) throw new Error('expectMatchesSpec: cannot tell the request method from the response');
  const requestPath = request?.path?.split('?')[0];
  if (requestPath !== undefined && !templateMatcher(pathTemplate).test(requestPath)) {
    throw new Error(`expectMatchesSpec: ${method} ${requestPath} is not an instance of ${pathTemplate}`);
  }
  const isHead = method.toUpperCase() === 'HEAD';
  const text: unknown = (res as { text?: unknown }).text;
  let body: unknown;
  let hasBody: boolean;
  if (Buffer.isBuffer(res.body)) {
    body = res.body;
    hasBody = res.body.length > 0;
  } else if (typeof text === 'string' && text.length > 0) {
    // The raw text, not superagent's parse of it, is what a client would have received.
    body = text;
    hasBody = true;
  } else {
    body = res.body;
    hasBody = Number(res.headers['content-length'] ?? 0) > 0;
  }
  checkResponse({
    method,
    pathTemplate,
    status: res.status,
    headers: res.headers,
    body: isHead ? undefined : body,
    hasBody: !isHead && hasBody,
  });
}

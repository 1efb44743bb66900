import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { MAX_BODY_BYTES } from '../../src/http/app.ts';

// Generators for requests on and around the contract. The limits are read from openapi.yaml, so
// that a change of the contract moves the edge the generators probe instead of leaving them behind.

type Schema = {
  enum?: string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, Schema>;
  oneOf?: Schema[];
};

const spec = parseYaml(readFileSync(fileURLToPath(new URL('../../openapi.yaml', import.meta.url)), 'utf8')) as {
  components: { schemas: Record<string, Schema>; parameters: Record<string, { schema: Schema }> };
};
const createFields = spec.components.schemas.CreateDownload!.properties!;
const [qualityNames, qualityHeights] = spec.components.schemas.Quality!.oneOf!;

export const contract = {
  fields: Object.keys(createFields),
  urlMaxLength: createFields.url!.maxLength!,
  filenameMaxLength: createFields.filename!.maxLength!,
  qualityNames: qualityNames!.enum!,
  qualityMin: qualityHeights!.minimum!,
  qualityMax: qualityHeights!.maximum!,
  idempotencyKeyMaxLength: spec.components.parameters.IdempotencyKey!.schema.maxLength!,
  tokenMaxLength: spec.components.parameters.Token!.schema.maxLength!,
  maxBodyBytes: MAX_BODY_BYTES,
};

type Length = { minLength?: number; maxLength?: number };

/** JSON Schema's minLength and maxLength count code points, not UTF-16 units. */
export const codePoints = (text: string): number => [...text].length;

const charIn = (min: number, max: number) => fc.integer({ min, max }).map((code) => String.fromCodePoint(code));

/** What Node lets a header value carry (RFC 9110 field-value): HTAB, SP, visible ASCII and obs-text. */
const headerChar = fc.oneof(fc.constant('\t'), charIn(0x20, 0x7e), charIn(0x80, 0xff));
export const headerText = (length: Length = {}) => fc.string({ unit: headerChar, ...length });

/** Any Unicode text, control characters and astral planes included (never a lone surrogate). */
export const anyText = (length: Length = {}) => fc.string({ unit: 'binary', ...length });

/** Control characters, line and paragraph separators, a BOM, a bidi override, anything non-ASCII. */
export const awkwardChar = fc.oneof(
  charIn(0x00, 0x1f),
  charIn(0x7f, 0x9f),
  fc.constantFrom('\u2028', '\u2029', '\ufeff', '\u202e', '\u{1f3ac}'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);

/** `text` with `insert` put at a position chosen by the generator. */
export const insertedAnywhere = (text: string, insert: fc.Arbitrary<string>) =>
  fc.tuple(fc.nat({ max: text.length }), insert).map(([at, piece]) => text.slice(0, at) + piece + text.slice(at));

/** `text` with one to three characters replaced, inserted or dropped; never `text` itself. */
export function edited(text: string, char: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.nat(), char, fc.constantFrom('replace', 'insert', 'drop'));
  return fc
    .array(edit, { minLength: 1, maxLength: 3 })
    .map((edits) =>
      // In code points: cutting a surrogate pair in two would make text that no URL or header can carry.
      edits.reduce((current, [position, piece, how]) => {
        const points = [...current];
        const at = points.length === 0 ? 0 : position % points.length;
        return [...points.slice(0, at), how === 'drop' ? '' : piece, ...points.slice(how === 'insert' ? at : at + 1)].join('');
      }, text),
    )
    .filter((result) => result !== text);
}

/** A URL the contract accepts, on a loopback address, at `port`. */
export function loopbackUrl(port: number): fc.Arbitrary<string> {
  return fc
    .record({
      scheme: fc.constantFrom('http', 'https', 'HTTP', 'hTTpS'),
      host: fc.constantFrom('127.0.0.1', '[::1]', 'localhost'),
      path: fc.webPath(),
      query: fc.option(fc.webQueryParameters(), { nil: undefined }),
      fragment: fc.option(fc.webFragments(), { nil: undefined }),
    })
    .map(
      ({ scheme, host, path, query, fragment }) =>
        `${scheme}://${host}:${port}${path}${query === undefined ? '' : `?${query}`}${fragment === undefined ? '' : `#${fragment}`}`,
    )
    .filter((url) => url.length <= contract.urlMaxLength);
}

export const validQuality = fc.oneof(fc.constantFrom(...contract.qualityNames), fc.integer({ min: contract.qualityMin, max: contract.qualityMax }));

/** The contract removes separators and control characters itself, so any text of an allowed length is a valid filename. */
export const validFilename = fc.string({ unit: fc.oneof(awkwardChar, fc.constantFrom('/', '\\', '.', ' ', '\u0000', '\n')), minLength: 1, maxLength: 40 });

export type CreateBody = { url: string; quality?: string | number; filename?: string; callback_url?: string };

export function validCreateBody(port: number): fc.Arbitrary<CreateBody> {
  return fc.record({ url: loopbackUrl(port), quality: validQuality, filename: validFilename, callback_url: loopbackUrl(port) }, { requiredKeys: ['url'] });
}

const notAString = fc.jsonValue({ maxDepth: 2 }).filter((value) => typeof value !== 'string');

/** Values that are not an http(s) URL of an allowed length, by kind, some close to one. */
export function invalidUrls(port: number): Record<string, fc.Arbitrary<unknown>> {
  const otherScheme = fc
    .tuple(fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9+.-]{0,9}$/), fc.constantFrom('://', ':', ':/', ':///'), fc.webPath())
    .filter(([scheme]) => !/^https?$/i.test(scheme))
    .map(([scheme, separator, path]) => `${scheme}${separator}127.0.0.1${path}`);
  const prefix = `http://127.0.0.1:${port}/`;
  return {
    'not a string': notAString,
    'not http(s)': fc.oneof(
      otherScheme,
      fc.constantFrom('', 'https:/127.0.0.1/', 'http:127.0.0.1', '//127.0.0.1/x', 'javascript:alert(1)', 'data:video/mp4;base64,AAAA', 'file:///etc/passwd'),
      anyText().filter((text) => !/^https?:\/\//i.test(text)),
    ),
    'over the length limit': fc.integer({ min: 1, max: 2000 }).map((extra) => prefix + 'a'.repeat(contract.urlMaxLength - prefix.length + extra)),
    'shaped like http yet no URL at all': fc
      .tuple(
        fc.constantFrom(
          'http://',
          'http://127.0.0.1:99999',
          'http://[::1',
          'http://:80',
          'http://exa%mple.com',
          'http://a..b:-1',
          'http://[fe80::1%eth0]',
          'http://user@',
          'https://[::1]x',
        ),
        fc.webPath(),
      )
      .map(([start, path]) => start + path),
    // RFC 3986 has no room for raw controls or non-ASCII; an http URL carrying one is not a `uri`.
    'carrying a control or non-ASCII character': loopbackUrl(port)
      .chain((url) => insertedAnywhere(url, awkwardChar))
      .filter((url) => /^https?:\/\//i.test(url) && !/^[\x21-\x7e]*$/.test(url)),
  };
}

/** Anything but a quality the contract names: other words, numeric strings, fractions, heights out of range. */
export const invalidQuality: fc.Arbitrary<unknown> = fc.oneof(
  fc.string().filter((text) => !contract.qualityNames.includes(text)),
  fc.constantFrom(...contract.qualityNames).map((name) => name.toUpperCase()),
  fc.integer({ min: contract.qualityMin, max: contract.qualityMax }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).filter((value) => !Number.isInteger(value)),
  fc.oneof(fc.integer({ max: contract.qualityMin - 1 }), fc.integer({ min: contract.qualityMax + 1 })),
  notAString.filter((value) => typeof value !== 'number'),
);

export const invalidFilename: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(''),
  anyText({ minLength: contract.filenameMaxLength + 1, maxLength: contract.filenameMaxLength + 50 }),
  notAString,
);

/** A name the contract does not define, with any value; the names that reach a prototype too. */
export const unknownField = fc.tuple(
  fc.oneof(
    fc.string({ minLength: 1, maxLength: 20 }).filter((name) => !contract.fields.includes(name)),
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'URL', 'Url', 'url '),
  ),
  fc.jsonValue({ maxDepth: 3 }),
);

const nesting = { array: { open: '[', inner: '', close: ']' }, object: { open: '{"a":', inner: 'null', close: '}' } };
export type Nesting = keyof typeof nesting;

/** `depth` arrays or objects inside each other, as JSON text. */
export const nestedJson = (depth: number, kind: Nesting) => {
  const { open, inner, close } = nesting[kind];
  return `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
};

const levelBytes = (kind: Nesting) => nesting[kind].open.length + nesting[kind].close.length;

/** The deepest nesting of `kind` whose JSON text fits in `bytes`. */
export const deepestWithin = (bytes: number, kind: Nesting) => Math.floor((bytes - nesting[kind].inner.length) / levelBytes(kind));

/** The shallowest nesting of `kind` whose JSON text is longer than `bytes`. */
export const shallowestOver = (bytes: number, kind: Nesting) => Math.floor(bytes / levelBytes(kind)) + 1;

export const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

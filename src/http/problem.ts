import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Request } from 'express';
import type { components } from '../../generated/api.ts';
import { InvalidDownloadRequest } from '../downloads/create-rules.ts';
import { InvalidCursorError } from '../downloads/list.ts';
import { DatabaseTooSlow } from '../db/deadline.ts';
import { unavailableCode } from '../db/errors.ts';
import { StoreUnavailable } from '../storage/index.ts';

// Every failure leaves the API as an RFC 9457 problem document: never a stack trace, never HTML.

export type Problem = components['schemas']['Problem'];
type FieldError = NonNullable<Problem['errors']>[number];

/** An error that is meant for the client, with the status and words it should see. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    readonly errors?: FieldError[],
    /** Members beyond the standard's: the failure's `code`, as a download's `error.code` would say it (a preview that found nothing); the `subscription_id` a conflict names. */
    readonly extensions: Pick<Problem, 'code' | 'subscription_id'> = {},
  ) {
    super(detail);
  }
}

/** The problem document's JSON, also for answers written straight to a socket. */
export function problemJson(problem: Pick<HttpProblem, 'status' | 'detail' | 'errors'> & { extensions?: HttpProblem['extensions'] }): string {
  const body: Problem = {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail: problem.detail,
    ...problem.extensions,
    ...(problem.errors ? { errors: problem.errors } : {}),
  };
  return JSON.stringify(body);
}

/** Also for requests answered before Express (the file shortcut): what Express's res.send would write. */
export function sendProblem(res: ServerResponse, problem: HttpProblem): void {
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/problem+json; charset=utf-8');
  if (res.req.method === 'HEAD') {
    res.end();
    return;
  }
  const body = problemJson(problem);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/** A request that failed: one Express parsed (its body may be what failed), or one answered before Express. */
type FailedRequest = IncomingMessage & Partial<Pick<Request, 'is' | 'body'>>;

/**
 * A client error made with http-errors, as body-parser and send make them: a 4xx `status`, `expose` set
 * because its message is meant for the client, and a `type` naming the failure, except for the
 * decoder's errors, which body-parser passes on as they came.
 */
type ClientHttpError = Error & { status: number; expose: true; type?: string; limit?: number; charset?: string; body?: unknown };

function isClientHttpError(error: unknown): error is ClientHttpError {
  const candidate = error as Partial<ClientHttpError> | null;
  return candidate?.expose === true && typeof candidate.status === 'number' && candidate.status >= 400 && candidate.status < 500;
}

/** The encodings a request body may come in: what body-parser decodes on every Node the service supports. */
export const BODY_ENCODINGS = ['identity', 'gzip', 'deflate', 'br'];

export const unsupportedBodyEncoding = () => new HttpProblem(415, `The request body's Content-Encoding must be one of ${BODY_ENCODINGS.join(', ')}.`);

export const unsupportedCharset = (charset: string) => new HttpProblem(415, `The request body's charset is ${charset}; it must be UTF-8.`);

export const ambiguousCharset = (charsets: readonly string[]) =>
  new HttpProblem(
    415,
    `The request's Content-Type names ${charsets.length > 1 ? `its charset ${charsets.length} times (${charsets.join(', ')})` : 'an empty charset'}; it must name UTF-8 once, or none.`,
  );

export const missingContentType = () => new HttpProblem(415, 'The request has no Content-Type; its body must be application/json.');

/** JSON that is no object or array, which body-parser refuses as it refuses text that is no JSON. */
function notAnObject(text: string): HttpProblem | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const kind = value === null ? 'null' : `a ${typeof value}`;
  return new HttpProblem(400, `The request body is ${kind}; a JSON object is expected.`, {}, [{ field: '/body', message: 'must be object' }]);
}

const bodyParserProblems: Record<string, (error: ClientHttpError) => HttpProblem> = {
  'entity.too.large': (error) => new HttpProblem(413, `The request body is larger than ${error.limit} bytes.`),
  'entity.parse.failed': (error) =>
    (typeof error.body === 'string' ? notAnObject(error.body) : undefined) ??
    new HttpProblem(400, 'The request body is not valid JSON.', {}, [{ field: '/body', message: 'is not valid JSON' }]),
  'encoding.unsupported': unsupportedBodyEncoding,
  'charset.unsupported': (error) => unsupportedCharset(error.charset ?? 'unknown'),
};

/**
 * The Content-Encoding whose decoder failed on the body, if that is what `error` is. body-parser
 * types every error of its own, refuses an encoding it has no decoder for (415), and passes the
 * decoder's error (zlib's, for gzip, deflate or br) on untyped, leaving no parsed body.
 */
function failedDecoding(error: ClientHttpError, req: FailedRequest): string | undefined {
  const encoding = req.headers['content-encoding']?.toLowerCase();
  const bodyRead = Boolean(req.is?.('application/json'));
  return !error.type && bodyRead && req.body === undefined && encoding && encoding !== 'identity' ? encoding : undefined;
}

function fromClientHttpError(error: ClientHttpError, req: FailedRequest): HttpProblem {
  const named = error.type ? bodyParserProblems[error.type] : undefined;
  if (named) return named(error);
  const encoding = failedDecoding(error, req);
  if (encoding) {
    return new HttpProblem(400, `The request body could not be decoded as ${encoding}, as its Content-Encoding says.`, {}, [
      { field: '/body', message: `is not valid ${encoding}` },
    ]);
  }
  const errors = error.status === 400 && error.type ? [{ field: '/body', message: error.message }] : undefined;
  return new HttpProblem(error.status, error.message, {}, errors);
}

/** express-openapi-validator's errors: a status and the list of what failed where. */
type ValidatorError = { status: number; message: string; errors: { path: string; message: string }[]; headers?: { Allow?: string } };

function isValidatorError(error: unknown): error is ValidatorError {
  const candidate = error as Partial<ValidatorError> | null;
  return typeof candidate?.status === 'number' && Array.isArray(candidate.errors);
}

/** Fields that take a link, whose pattern and format rules mean one thing a person can act on: a batch's links among them. */
const LINK_FIELDS = /^\/body\/(url|callback_url|urls\/\d+)$/;

/** The validator's words, except where they would quote a regular expression at a person. */
function plainMessage(item: { path: string; message: string }): string {
  return LINK_FIELDS.test(item.path) && /^must match (pattern|format)/.test(item.message)
    ? 'must be a full link starting with http:// or https://'
    : item.message;
}

/** For a database or a file store that cannot be reached for a moment. */
const RETRY_AFTER_SECONDS = 5;

export function toProblem(error: unknown, req: FailedRequest): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof InvalidDownloadRequest) return new HttpProblem(400, error.message, {}, [{ field: error.field, message: error.reason }]);
  if (error instanceof InvalidCursorError) {
    return new HttpProblem(400, error.message, {}, [{ field: '/query/cursor', message: 'must be a next_cursor this service returned' }]);
  }
  const code = unavailableCode(error);
  if (code) {
    req.log.warn({ code }, 'database unavailable');
    return new HttpProblem(503, 'The database is unavailable; try again shortly.', { 'Retry-After': String(RETRY_AFTER_SECONDS) });
  }
  if (error instanceof DatabaseTooSlow) {
    req.log.warn({ waitedMs: error.ms }, 'database too slow');
    return new HttpProblem(503, 'The database did not answer in time; try again shortly.', { 'Retry-After': String(RETRY_AFTER_SECONDS) });
  }
  if (error instanceof StoreUnavailable) {
    // Its words name the bucket and the store's own error: for the log, not for a client.
    req.log.warn({ reason: error.message }, 'file store unavailable');
    return new HttpProblem(503, 'The file store is unavailable; try again shortly.', { 'Retry-After': String(RETRY_AFTER_SECONDS) });
  }
  if (isValidatorError(error)) {
    const errors = error.status === 400 ? error.errors.map((item) => ({ field: item.path, message: plainMessage(item) })) : undefined;
    const detail = error.status === 400 ? 'The request is invalid.' : error.message;
    return new HttpProblem(error.status, detail, { ...(error.headers?.Allow ? { Allow: error.headers.Allow } : {}) }, errors);
  }
  if (isClientHttpError(error)) return fromClientHttpError(error, req);
  req.log.error({ err: error }, 'unexpected error');
  return new HttpProblem(500, 'An unexpected error occurred.');
}

export const problemHandler: ErrorRequestHandler = (error, req, res, next) => {
  if (res.headersSent) {
    next(error);
    return;
  }
  sendProblem(res, toProblem(error, req));
};

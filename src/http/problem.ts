import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, Response } from 'express';
import type { components } from '../../generated/api.ts';

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
  ) {
    super(detail);
  }
}

export function sendProblem(res: Response, problem: HttpProblem): void {
  const body: Problem = {
    type: 'about:blank',
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail: problem.detail,
    ...(problem.errors ? { errors: problem.errors } : {}),
  };
  res.status(problem.status).set(problem.headers).type('application/problem+json');
  if (res.req.method === 'HEAD') res.end();
  else res.send(JSON.stringify(body));
}

const bodyParserProblems: Record<string, (error: { limit?: number }) => HttpProblem> = {
  'entity.too.large': (error) => new HttpProblem(413, `The request body is larger than ${error.limit} bytes.`),
  'entity.parse.failed': () => new HttpProblem(400, 'The request body is not valid JSON.', {}, [{ field: '/body', message: 'is not valid JSON' }]),
  'encoding.unsupported': () => new HttpProblem(415, 'The request body must be UTF-8 JSON.'),
  'charset.unsupported': () => new HttpProblem(415, 'The request body must be UTF-8 JSON.'),
};

/** express-openapi-validator's errors: a status and the list of what failed where. */
type ValidatorError = { status: number; message: string; errors: { path: string; message: string }[]; headers?: { Allow?: string } };

function isValidatorError(error: unknown): error is ValidatorError {
  const candidate = error as Partial<ValidatorError> | null;
  return typeof candidate?.status === 'number' && Array.isArray(candidate.errors);
}

// Prisma's codes for a database that cannot be reached or answered in time: a passing state.
const DATABASE_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const DATABASE_RETRY_AFTER_SECONDS = 5;

function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && DATABASE_UNAVAILABLE.has(code)) {
    console.error(`[http] database unavailable (${code})`);
    return new HttpProblem(503, 'The database is unavailable; try again shortly.', { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) });
  }
  if (isValidatorError(error)) {
    const errors = error.status === 400 ? error.errors.map((item) => ({ field: item.path, message: item.message })) : undefined;
    const detail = error.status === 400 ? 'The request is invalid.' : error.message;
    return new HttpProblem(error.status, detail, { ...(error.headers?.Allow ? { Allow: error.headers.Allow } : {}) }, errors);
  }
  const tagged = error as { type?: string; status?: number; limit?: number };
  const fromBodyParser = tagged.type ? bodyParserProblems[tagged.type] : undefined;
  if (fromBodyParser) return fromBodyParser(tagged);
  console.error('[http] unexpected error', error);
  return new HttpProblem(500, 'An unexpected error occurred.');
}

export const problemHandler: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent) {
    next(error);
    return;
  }
  sendProblem(res, toProblem(error));
};

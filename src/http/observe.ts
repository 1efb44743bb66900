import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import { redactWith, type Logger } from '../operations/log.ts';
import type { Metrics } from '../operations/metrics.ts';

// One log line and one histogram sample per request. The request id is the client's X-Request-Id
// when it looks like one (so a proxy's id follows the request through), else a new one; it is sent
// back either way.

const REQUEST_ID = /^[\w.:-]{1,128}$/;

const passing = (res: ServerResponse) => res.statusCode === 503 && res.hasHeader('retry-after');

/**
 * The answer was never ended: the connection closed first (a client that went mid-file, or one the
 * service cut after an error). Its status alone would read as a whole 200 or 206.
 */
const cutShort = (res: ServerResponse) => !res.writableEnded;
const ending = (res: ServerResponse) => (cutShort(res) ? ', cut short' : '');

/**
 * The contract's name for the operation: the validator's match, else the route's own (those served
 * before the validator, such as /healthz, and bodies refused before it; HEAD as its GET); `other`
 * for anything else.
 */
function operationOf(req: Request, ids: Map<string, string>): string {
  const matched = (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
  const route = (req.route as { path?: unknown } | undefined)?.path;
  if (matched || typeof route !== 'string') return matched ?? 'other';
  return ids.get(`${req.method} ${route}`) ?? (req.method === 'HEAD' ? ids.get(`GET ${route}`) : undefined) ?? 'other';
}

export type RequestObserver = {
  /** For the requests Express routes: the operation is known once the validator or a route has matched. */
  handlers: RequestHandler[];
  /** For a request answered before Express (the file shortcut), whose operation is known at once. */
  observe(req: IncomingMessage, res: ServerResponse, operation: string): void;
};

/** `keys`: the API keys the service knows, kept out of the log wherever a client puts them. */
export function observeRequests(log: Logger, metrics: Metrics, operationIds: Map<string, string>, keys: string[]): RequestObserver {
  const redact = redactWith(keys);
  const logged = pinoHttp({
    logger: log,
    genReqId(req, res) {
      const given = req.headers['x-request-id'];
      // A token sent as a request id would be logged with every line of the request.
      const id = typeof given === 'string' && REQUEST_ID.test(given) && redact(given) === given ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: redact(req.url) }),
      res: (res: { statusCode: number; raw: ServerResponse }) => ({ status: res.statusCode, ...(cutShort(res.raw) && { aborted: true }) }),
    },
    // A 503 with Retry-After is the service saying "not now" (its stream limit, a database restart):
    // worth a warning, not an error with a stack that pino-http makes up for it.
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? (passing(res) ? 'warn' : 'error') : 'info'),
    customErrorObject: (_req, res, _error, value: Record<string, unknown>) => (passing(res) ? { ...value, err: undefined } : value),
    customSuccessMessage: (req, res, took) => `${req.method} ${redact(req.url ?? '')} ${res.statusCode} ${Math.round(took)} ms${ending(res)}`,
    customErrorMessage: (req, res) => `${req.method} ${redact(req.url ?? '')} ${res.statusCode}${ending(res)}`,
  });
  const timed = (res: ServerResponse, operation: () => string) => {
    const end = metrics.requests.startTimer();
    res.once('finish', () => end({ operation: operation(), status: String(res.statusCode) }));
  };
  return {
    handlers: [
      logged,
      (req, res, next) => {
        timed(res, () => operationOf(req, operationIds));
        next();
      },
    ],
    observe(req, res, operation) {
      logged(req, res);
      timed(res, () => operation);
    },
  };
}

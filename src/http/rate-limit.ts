import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type Options, type RateLimitInfo } from 'express-rate-limit';
import type { ApiKeys } from './auth.ts';
import { HttpProblem, sendProblem } from './problem.ts';

// Two limits on the /downloads operations, both off with RATE_LIMIT_PER_MINUTE=0:
// - requests: RATE_LIMIT_PER_MINUTE a minute per configured API key, or per client address when
//   the request has none (always, without API_KEYS). A bearer that is not a configured key never
//   gets a budget of its own, so inventing one per request gains nothing.
// - failed key attempts (with API_KEYS): FAILED_KEY_ATTEMPTS_PER_MINUTE answers of 401 a minute per
//   client address; past that, every request from the address is answered 429 until the minute is
//   over, a configured key included, because a guess that succeeds must look like one that fails.
// Addresses are grouped as express-rate-limit's ipKeyGenerator does (an IPv6 /56 is one client).

export const FAILED_KEY_ATTEMPTS_PER_MINUTE = 10;
const WINDOW_MS = 60_000;

const pass: RequestHandler = (_req, _res, next) => next();

const addressOf = (req: Request): string => `address-${ipKeyGenerator(req.ip ?? '')}`;

function tooMany(reason: string): Options['handler'] {
  return (req, res, _next, options) => {
    const info = (req as unknown as Record<string, RateLimitInfo | undefined>)[options.requestPropertyName];
    const resetAt = info?.resetTime?.getTime() ?? Date.now() + WINDOW_MS;
    const retryAfter = Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
    sendProblem(res, new HttpProblem(429, `${reason}; retry after ${retryAfter} seconds.`, { 'Retry-After': String(retryAfter) }));
  };
}

/** RATE_LIMIT_PER_MINUTE requests a minute per configured key, else per client address. Runs after the key check. */
export function requestLimit(keys: ApiKeys, perMinute: number): RequestHandler {
  if (perMinute === 0) return pass;
  return rateLimit({
    windowMs: WINDOW_MS,
    limit: perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (req) => {
      const caller = keys.of(req);
      return caller ? `key-${caller.owner}` : addressOf(req);
    },
    handler: tooMany('Too many requests'),
  });
}

/** Failed key attempts per client address. Runs before the key check, which answers the 401s it counts. */
export function failedKeyAttemptLimit(keys: ApiKeys, perMinute: number): RequestHandler {
  if (perMinute === 0 || !keys.required) return pass;
  const limiter = rateLimit({
    windowMs: WINDOW_MS,
    limit: FAILED_KEY_ATTEMPTS_PER_MINUTE,
    // Its own name on the request, so that the request limit after it does not overwrite it.
    requestPropertyName: 'failedKeyAttempts',
    standardHeaders: false,
    legacyHeaders: false,
    keyGenerator: addressOf,
    // Only a request without a configured key is counted; one with a key is let through uncounted
    // while its address is under the limit. Counting on the answer's status instead would count
    // every request still running, so that a client with many at once would lock itself out.
    skip: async (req) => keys.of(req) !== undefined && ((await limiter.getKey(addressOf(req)))?.totalHits ?? 0) < FAILED_KEY_ATTEMPTS_PER_MINUTE,
    handler: tooMany('Too many failed API key attempts from this address'),
  });
  return limiter;
}

import type { RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { apiKeyOf } from './auth.ts';
import { HttpProblem, sendProblem } from './problem.ts';

/** RATE_LIMIT_PER_MINUTE requests a minute per API key, or per client address without one; 0 turns it off. */
export function rateLimitPerMinute(limit: number): RequestHandler {
  if (limit === 0) return (_req, _res, next) => next();
  return rateLimit({
    windowMs: 60_000,
    limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (req) => {
      const key = apiKeyOf(req.get('authorization'));
      return key ? `key:${key}` : `ip:${ipKeyGenerator(req.ip ?? '')}`;
    },
    handler: (req, res) => {
      const resetTime = (req as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      sendProblem(res, new HttpProblem(429, `Too many requests; retry after ${retryAfter} seconds.`, { 'Retry-After': String(retryAfter) }));
    },
  });
}

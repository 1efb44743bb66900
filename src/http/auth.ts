import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HttpProblem } from './problem.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * With API_KEYS set, `Authorization: Bearer <key>` must name one of them. Keys are compared as
 * digests of equal length in constant time, and every key is compared, so that the time taken
 * says nothing about which key came close.
 */
export function requireApiKey(keys: string[]): RequestHandler {
  const digests = keys.map(digest);
  return (req, _res, next) => {
    if (digests.length === 0) return next();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    const given = digest(match?.[1] ?? '');
    const valid = digests.reduce((found, key) => timingSafeEqual(key, given) || found, false);
    if (!match || !valid) {
      throw new HttpProblem(401, 'A valid API key is required (Authorization: Bearer <key>).', { 'WWW-Authenticate': 'Bearer' });
    }
    next();
  };
}

/** The key a request authenticated with, for rate limiting per key. */
export function apiKeyOf(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
}

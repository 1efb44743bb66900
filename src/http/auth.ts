import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { HttpProblem } from './problem.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * API_KEYS: with keys set, `Authorization: Bearer <key>` must name one of them. Keys are compared
 * as digests of equal length in constant time, and every key is compared, so that the time taken
 * says nothing about which key came close.
 */
export class ApiKeys {
  private readonly digests: Buffer[];
  // Asked by the limits and by the check of one request; compared once.
  private readonly verdicts = new WeakMap<Request, string | null>();

  constructor(keys: string[]) {
    this.digests = keys.map(digest);
  }

  get required(): boolean {
    return this.digests.length > 0;
  }

  /** Which configured key the request's bearer is (a name that is not the key), or undefined. */
  of(req: Request): string | undefined {
    let verdict = this.verdicts.get(req);
    if (verdict === undefined) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
      const index = given === undefined ? -1 : this.indexOf(digest(given));
      verdict = index < 0 ? null : `key-${index}`;
      this.verdicts.set(req, verdict);
    }
    return verdict ?? undefined;
  }

  /** 401 unless the bearer is a configured key; lets everything through without API_KEYS. */
  readonly require: RequestHandler = (req, _res, next) => {
    if (this.required && this.of(req) === undefined) {
      throw new HttpProblem(401, 'A valid API key is required (Authorization: Bearer <key>).', { 'WWW-Authenticate': 'Bearer' });
    }
    next();
  };

  private indexOf(given: Buffer): number {
    return this.digests.reduce((found, key, index) => (timingSafeEqual(key, given) ? index : found), -1);
  }
}

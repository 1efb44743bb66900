import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { SHARED_SPACE, type Caller } from '../downloads/caller.ts';
import { HttpProblem } from './problem.ts';

type Key = { hash: Buffer; caller: Caller };

/**
 * API_KEYS and ADMIN_API_KEYS: with keys set, `Authorization: Bearer <key>` must name one of them.
 * A key is known by its HMAC under the key hash secret, which is also the owner its downloads are
 * recorded under, so that the key itself is kept nowhere but in the configuration. Every key is
 * compared, in constant time, so that the time taken says nothing about which key came close.
 */
export class ApiKeys {
  private readonly keys: Key[];
  private readonly secret: Buffer | undefined;
  // Asked by the limits, by the check and by the route of one request; compared once.
  private readonly verdicts = new WeakMap<Request, Caller | null>();

  /** `secret` is needed when there are keys. A key in both lists is an admin's. */
  constructor(options: { keys: string[]; adminKeys: string[]; secret: Buffer | undefined }) {
    const admins = new Set(options.adminKeys);
    const all = [...new Set([...options.keys, ...options.adminKeys])];
    if (all.length > 0 && !options.secret) throw new Error('API keys need the key hash secret');
    this.secret = options.secret;
    this.keys = all.map((key) => {
      const hash = this.hashOf(key);
      return { hash, caller: { owner: hash.toString('hex'), sees: admins.has(key) ? 'all' : 'own' } };
    });
  }

  get required(): boolean {
    return this.keys.length > 0;
  }

  /** The configured key's caller the request's bearer makes, or undefined (no key, or not one configured). */
  of(req: Request): Caller | undefined {
    let verdict = this.verdicts.get(req);
    if (verdict === undefined) {
      const given = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
      verdict = given === undefined || !this.required ? null : this.find(this.hashOf(given));
      this.verdicts.set(req, verdict);
    }
    return verdict ?? undefined;
  }

  /** Who the request is: its key's caller, or the shared space without keys. Runs after `require`. */
  callerOf(req: Request): Caller {
    if (!this.required) return SHARED_SPACE;
    const caller = this.of(req);
    if (!caller) throw unauthorized();
    return caller;
  }

  /** 401 unless the bearer is a configured key; lets everything through without keys. */
  readonly require: RequestHandler = (req, _res, next) => {
    this.callerOf(req);
    next();
  };

  private hashOf(key: string): Buffer {
    return createHmac('sha256', this.secret!).update(key).digest();
  }

  private find(given: Buffer): Caller | null {
    return this.keys.reduce<Caller | null>((found, key) => (timingSafeEqual(key.hash, given) ? key.caller : found), null);
  }
}

function unauthorized(): HttpProblem {
  return new HttpProblem(401, 'A valid API key is required (Authorization: Bearer <key>).', { 'WWW-Authenticate': 'Bearer' });
}

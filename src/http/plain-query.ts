import type { RequestHandler } from 'express';
import { HttpProblem } from './problem.ts';

/**
 * The contract's query parameters have plain names. The validator reads bracketed ones
 * (`status[a]=...`) as nested objects, which its array parsing then fails on with a 500; they
 * are refused here, before it, as the client's mistake they are.
 */
export const plainQueryNames: RequestHandler = (req, _res, next) => {
  const names = new URL(req.originalUrl, 'http://localhost').searchParams.keys();
  const bracketed = [...names].find((name) => /[[\]]/.test(name));
  if (bracketed !== undefined) {
    throw new HttpProblem(400, 'The request is invalid.', {}, [
      { field: `/query/${bracketed}`, message: 'is not a parameter of this operation (names take no brackets)' },
    ]);
  }
  next();
};

import type { RequestHandler } from 'express';
import { HttpProblem } from './problem.ts';

type Parameter = { $ref?: string; name?: string; in?: string; schema?: { type?: unknown } };
type Contract = {
  paths: Record<string, Record<string, unknown>>;
  components?: { parameters?: Record<string, Parameter> };
};

/** The names of the contract's integer query parameters, on any operation. */
function integerQueryNames(spec: Contract): Set<string> {
  const resolve = (parameter: Parameter) => (parameter.$ref ? spec.components?.parameters?.[parameter.$ref.split('/').pop()!] : parameter);
  // Parameters sit on path items and on their operations.
  const holders = Object.values(spec.paths).flatMap((item) => [item, ...Object.values(item)]);
  const parameters = holders.flatMap((holder) => ((holder as { parameters?: Parameter[] }).parameters ?? []).map(resolve));
  return new Set(parameters.filter((parameter) => parameter?.in === 'query' && parameter.schema?.type === 'integer').map((parameter) => parameter!.name!));
}

function refuse(name: string, message: string): never {
  throw new HttpProblem(400, 'The request is invalid.', {}, [{ field: `/query/${name}`, message }]);
}

/**
 * The contract's query parameters are plain, and refused here, before the validator, when not:
 * - Their names take no brackets. The validator reads bracketed ones (`status[a]=...`) as nested
 *   objects, which its array parsing then fails on with a 500.
 * - Their integers are decimal digits. The validator turns a query's text into a number as
 *   JavaScript's Number() does, which also takes `1e1`, `0x10`, `10.0`, `+10` and spaces.
 */
export function plainQuery(spec: Contract): RequestHandler {
  const integers = integerQueryNames(spec);
  return (req, _res, next) => {
    const query = new URL(req.originalUrl, 'http://localhost').searchParams;
    for (const [name, value] of query) {
      if (/[[\]]/.test(name)) refuse(name, 'is not a parameter of this operation (names take no brackets)');
      if (integers.has(name) && !/^-?[0-9]+$/.test(value)) refuse(name, 'must be an integer in decimal digits');
      // Past 2^53 the number is not the one written, and from 309 digits on it is Infinity, which no bound stops.
      if (integers.has(name) && !Number.isSafeInteger(Number(value))) refuse(name, 'must be an integer below 2^53');
    }
    next();
  };
}

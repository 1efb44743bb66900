import express, { type RequestHandler } from 'express';
import { ambiguousCharset, BODY_ENCODINGS, missingContentType, unsupportedBodyEncoding, unsupportedCharset } from './problem.ts';

// One rule for the body of every operation that takes one (openapi.yaml): JSON, labelled so, in
// UTF-8 (RFC 8259, 8.1), in a Content-Encoding that every Node the service supports decodes.

const decoded = new Set(BODY_ENCODINGS);

/**
 * 415 for a body refused whatever it holds: one without a Content-Type (every such operation
 * requires a body), or a JSON one in an encoding outside BODY_ENCODINGS (as body-parser reads the
 * header: lower-cased, whole). body-parser decodes zstd as well from Node 22.15 on.
 */
const labelled: RequestHandler = (req, _res, next) => {
  const encoding = req.headers['content-encoding']?.toLowerCase();
  const contentType = req.headers['content-type'];
  if (contentType === undefined) return next(missingContentType());
  const charsets = charsetsOf(contentType);
  if (charsets.length > 1 || charsets[0] === '') return next(ambiguousCharset(charsets));
  next(encoding !== undefined && req.is('application/json') && !decoded.has(encoding) ? unsupportedBodyEncoding() : undefined);
};

/**
 * The charset parameters of a Content-Type as written. body-parser takes the first of two, where
 * another reader may take the last: a parameter given twice is an error (RFC 6838, 4.3).
 */
function charsetsOf(contentType: string): string[] {
  return [...contentType.matchAll(/;\s*charset\s*=\s*("[^"]*"|[^;\s]*)/gi)].map(([, value]) => value!.replace(/^"(.*)"$/, '$1'));
}

/**
 * body-parser refuses a charset outside UTF-* itself, but decodes UTF-16 or UTF-32: here those are
 * refused too, with the charset as body-parser read it (lower-cased; UTF-8 when none is given).
 */
function utf8Only(_req: unknown, _res: unknown, _body: Buffer, charset: string): void {
  if (charset !== 'utf-8') throw unsupportedCharset(charset);
}

/** The handlers that read the JSON body of an operation, up to `limit` bytes. */
export const jsonBody = (limit: number): RequestHandler[] => [labelled, express.json({ limit, verify: utf8Only })];

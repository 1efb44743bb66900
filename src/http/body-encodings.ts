import type { RequestHandler } from 'express';
import { BODY_ENCODINGS, unsupportedBodyEncoding } from './problem.ts';

// body-parser decodes whatever the zlib of the Node under it can: zstd as well from Node 22.15
// on. The contract takes the same bodies on every Node the service supports, so an encoding
// outside them is refused before body-parser, as body-parser refuses one it has no decoder for.

const decoded = new Set(BODY_ENCODINGS);

/** 415 for a JSON body in an encoding outside BODY_ENCODINGS (as body-parser reads the header: lower-cased, whole). */
export const knownBodyEncoding: RequestHandler = (req, _res, next) => {
  const encoding = req.headers['content-encoding']?.toLowerCase();
  next(encoding !== undefined && req.is('application/json') && !decoded.has(encoding) ? unsupportedBodyEncoding() : undefined);
};

import type { IncomingMessage, ServerResponse } from 'node:http';
import fresh from 'fresh';
import parseRange from 'range-parser';
import type { StoredFile } from '../storage/index.ts';
import { HttpProblem } from './problem.ts';

// A stored file, sent with the validators the caller has set (ETag, Last-Modified): 304 for a
// conditional request that still matches, 206 for one range (416 for one past the end), the whole
// file otherwise. `send`, under res.sendFile, reads in 64 KiB pieces, which held one connection to
// about a third of what 1 MiB pieces reach; it has no setting for it, so ranges and validators are
// left to `range-parser` and `fresh`, and the bytes to the store.

/** Sends an open stored file, which the caller closes (or keeps open for the next request). */
export async function sendStoredFile(req: IncomingMessage, res: ServerResponse, file: StoredFile): Promise<void> {
  const { size } = file;
  const validators = { etag: res.getHeader('ETag') as string | undefined, 'last-modified': res.getHeader('Last-Modified') as string | undefined };
  res.setHeader('Accept-Ranges', 'bytes');
  // RFC 9110 has the origin evaluate If-None-Match also when the request says `no-cache`, which
  // every fetch() client adds to a conditional one; `fresh` would answer it in full.
  // An If-Modified-Since later than now is invalid (RFC 9110 13.1.3), so it is ignored.
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  const conditions = { ...req.headers, 'cache-control': undefined, ...(since > Date.now() ? { 'if-modified-since': undefined } : {}) };
  if ((req.headers['if-none-match'] || req.headers['if-modified-since']) && fresh(conditions, validators)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  let start = 0;
  let end = size - 1;
  // The range unit is case-insensitive (RFC 9110 14.1); range-parser and the checks below know only `bytes=`.
  const range = req.headers.range?.replace(/^bytes=/i, 'bytes=');
  if (range && rangeStillApplies(String(req.headers['if-range'] ?? ''), validators)) {
    const ranges = parseRange(size, suffixWithin(range, size), { combine: true });
    if (ranges === -1 && unsatisfiable(range, size))
      throw new HttpProblem(416, `The range cannot be satisfied; the file has ${size} bytes.`, { 'Content-Range': `bytes */${size}` });
    // Several ranges would need a multipart body; the whole file answers them as well.
    if (ranges !== -1 && ranges !== -2 && ranges.type === 'bytes' && ranges.length === 1) {
      ({ start, end } = ranges[0]!);
      res.statusCode = 206;
      res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    }
  }
  res.setHeader('Content-Length', String(Math.max(0, end - start + 1)));
  if (req.method === 'HEAD' || size === 0) {
    res.end();
    return;
  }
  await file.sendTo(res, start, end);
}

/** `bytes=-N` for more than the file's N bytes is the whole file (RFC 9110 14.1.2), which range-parser refuses. */
function suffixWithin(range: string, size: number): string {
  const suffix = /^bytes=\s*-(\d+)\s*$/.exec(range);
  return suffix && Number(suffix[1]) > size ? `bytes=-${size}` : range;
}

/**
 * range-parser answers -1 both for ranges past the end and for ranges that make no sense (5-1);
 * only the first are a 416, the others are ignored like any invalid Range (RFC 9110 14.2).
 */
function unsatisfiable(range: string, size: number): boolean {
  const specs = range
    .replace(/^bytes=/, '')
    .split(',')
    .map((spec) => spec.trim());
  return specs.every((spec) => {
    const [, first, last] = /^(\d+)-(\d*)$/.exec(spec) ?? [];
    if (first !== undefined) return Number(first) >= size && (last === '' || Number(last) >= Number(first));
    return spec === '-0';
  });
}

/** If-Range: the range holds only while the file is the one the client's validator names. */
function rangeStillApplies(ifRange: string, validators: { etag?: string; 'last-modified'?: string }): boolean {
  if (!ifRange) return true;
  if (ifRange.startsWith('"') || ifRange.startsWith('W/')) return ifRange === validators.etag;
  const since = Date.parse(ifRange);
  const modified = Date.parse(validators['last-modified'] ?? '');
  return !Number.isNaN(since) && !Number.isNaN(modified) && modified <= since;
}

import { DownloadError } from '../core/errors.ts';

// The head of an HTTP/1.1 answer (status line and header fields), read strictly: what a source
// sends is an attacker's, and an answer that is not plainly HTTP is not read at all.

/** Node's own client refuses heads larger than this too. */
export const MAX_HEAD_BYTES = 16 * 1024;

export type ResponseHead = { status: number; headers: Record<string, string> };

const STATUS_LINE = /^HTTP\/1\.[01] ([1-9]\d\d)(?: [\t -~\x80-\xff]*)?$/;
const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*([\t -~\x80-\xff]*?)[\t ]*$/;
/**
 * Fields of an answer of which Node's client keeps the first and drops any repeat. Read the same
 * here: a file's first response comes through Node's client and its pieces through this one, and
 * an ETag sent twice must read as the same version from both, not as `"x", "x"` against `"x"`.
 */
const FIRST_ONLY = new Set(['age', 'content-type', 'etag', 'expires', 'last-modified', 'location', 'retry-after', 'server']);

/**
 * A head that did not come whole within `ms` of the request: every byte of it resets the idle
 * timeout, so a source dripping a header a second would otherwise hold a download for ever.
 */
export function slowHead(ms: number): DownloadError {
  return new DownloadError('source_timeout', `The source did not send the whole head of its answer within ${ms / 1000} s.`, true);
}

/** The head in `bytes` (everything before the blank line that ends it); null when it is not valid HTTP/1.x. */
export function parseHead(bytes: Buffer): ResponseHead | null {
  const [statusLine, ...fields] = bytes.toString('latin1').split('\r\n');
  const status = STATUS_LINE.exec(statusLine ?? '');
  if (!status) return null;
  const headers: Record<string, string> = {};
  for (const line of fields) {
    // A folded line (obsolete) or a bare name is no field.
    const field = FIELD.exec(line);
    if (!field) return null;
    const name = field[1]!.toLowerCase();
    const value = field[2]!;
    if (name === 'content-length' && headers[name] !== undefined && headers[name] !== value) return null;
    if (FIRST_ONLY.has(name) && headers[name] !== undefined) continue;
    headers[name] = headers[name] === undefined || name === 'content-length' ? value : `${headers[name]}, ${value}`;
  }
  return { status: Number(status[1]), headers };
}

/** Where the blank line that ends a head is in `bytes`, looked for from `from` on (the index after it); -1 while it has not come. */
export function headEnd(bytes: Buffer, from = 0): number {
  const at = bytes.indexOf('\r\n\r\n', from, 'latin1');
  return at < 0 ? -1 : at + 4;
}

/** A body's length when its head frames it by Content-Length alone, as bytes sent as they are; null otherwise. */
export function plainLength(headers: Record<string, string>): number | null {
  if (headers['transfer-encoding'] !== undefined) return null;
  const coding = headers['content-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'identity') return null;
  const length = headers['content-length'];
  if (length === undefined || !/^\d{1,15}$/.test(length)) return null;
  return Number(length);
}

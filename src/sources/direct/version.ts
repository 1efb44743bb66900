import { parseJson } from '../../core/json.ts';
import type { SourceResponse } from '../../net/guarded-client.ts';

// Which version of a file a response is of, by what it says of itself: its ETag (strong or weak)
// and its Last-Modified. Bytes of two responses go into one file only when every validator both
// give agrees; a range is asked for (If-Range) only with one that promises the same bytes.

export type FileVersion = { etag: string | null; lastModified: string | null };

export function versionOf(headers: SourceResponse['headers']): FileVersion {
  return { etag: headers.etag ?? null, lastModified: headers['last-modified'] ?? null };
}

/**
 * What If-Range may carry (RFC 9110, 13.1.5): a strong ETag; Last-Modified only when there is no
 * ETag at all, since a weak one says the bytes may differ while the date stays. Null: none.
 */
export function ifRangeOf(version: FileVersion): string | null {
  if (version.etag !== null) return version.etag.startsWith('W/') ? null : version.etag;
  return version.lastModified;
}

/** Whether two responses are of one version as far as both say: every validator both give agrees. */
export function sameVersion(a: FileVersion, b: FileVersion): boolean {
  const differ = (x: string | null, y: string | null) => x !== null && y !== null && x !== y;
  return !differ(a.etag, b.etag) && !differ(a.lastModified, b.lastModified);
}

/** The version as a download's row keeps it (`source_validator`); null when the source named none. */
export function storedVersion(version: FileVersion): string | null {
  return version.etag === null && version.lastModified === null ? null : JSON.stringify(version);
}

/** A stored version back; a bare value, as rows written before kept one, is an ETag or a date. */
export function parseStoredVersion(stored: string | null): FileVersion {
  if (stored === null) return { etag: null, lastModified: null };
  const parsed = parseJson(stored) as Partial<Record<keyof FileVersion, unknown>> | null;
  if (parsed !== null && typeof parsed === 'object') {
    return { etag: typeof parsed.etag === 'string' ? parsed.etag : null, lastModified: typeof parsed.lastModified === 'string' ? parsed.lastModified : null };
  }
  return stored.startsWith('"') || stored.startsWith('W/') ? { etag: stored, lastModified: null } : { etag: null, lastModified: stored };
}

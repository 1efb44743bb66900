import { randomBytes, timingSafeEqual } from 'node:crypto';

// A retrieval token is `<id>.<secret>`: the download's id in base64url (22 characters) and 256
// random bits. The id finds the row; the secret is compared in constant time. Any altered
// character either names another (unknown) id or fails the comparison.

const UUID_HEX = /^[0-9a-f]{32}$/;

export function newTokenSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function formatToken(id: string, secret: string): string {
  return `${Buffer.from(id.replaceAll('-', ''), 'hex').toString('base64url')}.${secret}`;
}

export function parseToken(token: string): { id: string; secret: string } | null {
  const [idPart, secret, extra] = token.split('.');
  if (!idPart || !secret || extra !== undefined || !/^[A-Za-z0-9_-]{22}$/.test(idPart)) return null;
  const hex = Buffer.from(idPart, 'base64url').toString('hex');
  // base64url decoding ignores the low bits of the last character; re-encoding catches their tampering.
  if (!UUID_HEX.test(hex) || Buffer.from(hex, 'hex').toString('base64url') !== idPart) return null;
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { id, secret };
}

export function secretMatches(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

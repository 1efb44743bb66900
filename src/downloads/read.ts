import { LRUCache } from 'lru-cache';
import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Prisma } from '../db/prisma.ts';
import { parseToken, secretMatches } from '../core/token.ts';

export function findDownload(prisma: Prisma, id: string): Promise<Row | null> {
  return prisma.download.findUnique({ where: { id } });
}

/**
 * Finds the download a retrieval token was issued for (null for an unknown or altered token).
 * Completed downloads are kept in memory for a while: a completed row does not change until it
 * expires, and whether it has expired is read from its expires_at, so a file served many times
 * (ranges, players seeking) costs one query, not one per request.
 */
export class TokenLookup {
  private readonly completed = new LRUCache<string, Row>({ max: 10_000, ttl: 60_000 });

  constructor(private readonly prisma: Prisma) {}

  async find(token: string): Promise<Row | null> {
    const parsed = parseToken(token);
    if (!parsed) return null;
    const row = this.completed.get(parsed.id) ?? (await findDownload(this.prisma, parsed.id));
    if (!row?.tokenSecret || !secretMatches(row.tokenSecret, parsed.secret)) return null;
    if (row.status === 'completed') this.completed.set(parsed.id, row);
    return row;
  }
}

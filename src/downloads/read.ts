import { LRUCache } from 'lru-cache';
import type { Download as Row } from '../../generated/prisma/client.ts';
import { parseToken, secretMatches } from '../core/token.ts';
import type { DownloadRepository } from './repository.ts';

/**
 * Finds the download a retrieval token was issued for (null for an unknown or altered token).
 * Completed downloads are kept in memory for a while: a completed row does not change until it
 * expires, and whether it has expired is read from its expires_at, so a file served many times
 * (ranges, players seeking) costs one query, not one per request.
 */
export class TokenLookup {
  private readonly completed = new LRUCache<string, Row>({ max: 10_000, ttl: 60_000 });

  constructor(private readonly downloads: DownloadRepository) {}

  async find(token: string): Promise<Row | null> {
    const parsed = parseToken(token);
    if (!parsed) return null;
    const row = this.completed.get(parsed.id) ?? (await this.downloads.find(parsed.id));
    if (!row?.tokenSecret || !secretMatches(row.tokenSecret, parsed.secret)) return null;
    if (row.status === 'completed') this.completed.set(parsed.id, row);
    return row;
  }

  /** Drops what is kept of download `id`, which has changed (its file was found gone). */
  forget(id: string): void {
    this.completed.delete(id);
  }
}

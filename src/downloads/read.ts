import type { Download as Row } from '../../generated/prisma/client.ts';
import type { Prisma } from '../db/prisma.ts';
import { parseToken, secretMatches } from './token.ts';

export function findDownload(prisma: Prisma, id: string): Promise<Row | null> {
  return prisma.download.findUnique({ where: { id } });
}

/** The download a retrieval token was issued for, or null for an unknown or altered token. */
export async function findByToken(prisma: Prisma, token: string): Promise<Row | null> {
  const parsed = parseToken(token);
  if (!parsed) return null;
  const row = await findDownload(prisma, parsed.id);
  if (!row?.tokenSecret || !secretMatches(row.tokenSecret, parsed.secret)) return null;
  return row;
}

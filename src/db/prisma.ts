import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from '../../generated/prisma/client.ts';

export type Prisma = InstanceType<typeof PrismaClient>;

/** Prisma on `pool`, which it shares; `$disconnect` leaves the pool open for its owner to end. */
export function createPrisma(pool: pg.Pool): Prisma {
  return new PrismaClient({ adapter: new PrismaPg(pool) });
}

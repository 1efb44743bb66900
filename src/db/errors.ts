// What an error from the database means, whether Prisma or pg (the create batch) reported it.

/**
 * Prisma's codes for a database that cannot be reached or answered in time: a passing state.
 * P2028 is a transaction that ran out of its time (a lock held elsewhere), and was rolled back.
 */
const PRISMA_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** The socket errors that Prisma's driver adapter reports as those codes, as pg passes them on. */
const SOCKET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ECONNRESET', 'ETIMEDOUT']);

type Coded = { code?: unknown; syscall?: unknown };

function coded(error: unknown): Coded {
  return typeof error === 'object' && error !== null ? error : {};
}

/** Whether the database could not be reached or did not answer in time; the code it came with, if so. */
export function unavailableCode(error: unknown): string | undefined {
  const { code, syscall } = coded(error);
  if (typeof code !== 'string') return undefined;
  return PRISMA_UNAVAILABLE.has(code) || (SOCKET_UNAVAILABLE.has(code) && typeof syscall === 'string') ? code : undefined;
}

/** Postgres unique_violation, as pg reports it (23505) or Prisma does (P2002). */
export function isUniqueViolation(error: unknown): boolean {
  const { code } = coded(error);
  return code === '23505' || code === 'P2002';
}

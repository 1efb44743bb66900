import type { Config } from './index.ts';

// A start that fails is explained in terms of the setting that would fix it: the person reading
// it changes configuration, not code.

type SystemError = Error & { code?: string; syscall?: string; path?: string; port?: number; address?: string };

/** Connection failures of node, of PostgreSQL (bad password, no such role or database) and of Prisma (P1000-P1003, P1010). */
const DATABASE_FAILURES = ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', '28P01', '28000', '3D000', 'P1000', 'P1001', 'P1002', 'P1003', 'P1010'];

/** Prisma's migration engine reports a connection failure with a message and no code. */
const DATABASE_MESSAGES = /can't reach database server|authentication failed|denied access|role .* does not exist|database .* does not exist/i;

const withoutUserInfo = (url: string): string => url.replace(/\/\/[^@/]*@/, '//');

/** `embedded`: whether unsetting DATABASE_URL would run the embedded PostgreSQL here. */
export function explainStartFailure(error: unknown, config: Config, embedded: boolean): string {
  const failure = error as SystemError;
  // One line: some libraries (Prisma) spread a message over several.
  const reason = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ').trim();
  const clause = reason.replace(/\.$/, '');
  if (failure.syscall === 'listen') {
    if (failure.code === 'EADDRINUSE') return `Port ${config.port} on ${config.host} is already in use; set PORT (or HOST) to one that is free.`;
    if (failure.code === 'EACCES') return `Listening on port ${config.port} needs privileges this process lacks; set PORT to 1024 or above.`;
    if (failure.code === 'EADDRNOTAVAIL') return `HOST=${config.host} is not an address of this machine; set HOST to one of its addresses (or 0.0.0.0).`;
  }
  if (failure.path?.startsWith(config.dataDir) && ['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC'].includes(failure.code ?? '')) {
    return `DATA_DIR (${config.dataDir}) cannot be used: ${clause}; set DATA_DIR to a directory this service may create and write.`;
  }
  if (config.databaseUrl && (DATABASE_FAILURES.includes(failure.code ?? '') || DATABASE_MESSAGES.test(reason))) {
    return `The database at DATABASE_URL (${withoutUserInfo(config.databaseUrl)}) cannot be used: ${clause}; check DATABASE_URL${embedded ? ', or unset it to run the embedded PostgreSQL' : ''}.`;
  }
  return reason;
}

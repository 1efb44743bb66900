import { pino, type Logger } from 'pino';
import type { Config } from '../config/index.ts';

export type { Logger } from 'pino';

// One JSON line per event on stdout. What could open a door never reaches a line: API keys
// (the Authorization header), retrieval tokens (in file paths and in downloads), webhook secrets.

/** The retrieval token of a file path, as logs show it. */
export const redactToken = (url: string): string => url.replace(/(\/download\/)[^/?#]+/, '$1[token]');

export function createLogger(config: Pick<Config, 'logLevel' | 'role'>): Logger {
  return pino({
    level: config.logLevel,
    base: { role: config.role },
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', '*.token', '*.download_url', 'secret'], censor: '[redacted]' },
  });
}

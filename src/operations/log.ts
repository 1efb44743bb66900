import { pino, type Logger } from 'pino';
import type { Config } from '../config/index.ts';

export type { Logger } from 'pino';

// One JSON line per event on stdout. What could open a door never reaches a line: API keys
// (the Authorization header), retrieval tokens (in file paths and in downloads), webhook secrets.

/** A retrieval token (`<22>.<43>` base64url), also percent-encoded, wherever it stands. */
const TOKEN = /[A-Za-z0-9_-]{22}(?:\.|%2e)[A-Za-z0-9_-]{43}/gi;
/** Whatever follows the file path (matched as loosely as Express routes it: any case, repeated or encoded slashes). */
const FILE_PATH = /(\/download(?:\/|%2f)+)[^?#]*/gi;
/** Query values a client may have put a secret in by mistake. */
const SECRET_PARAMS = /([?&](?:api[_-]?key|key|token|access[_-]?token|secret)=)[^&#]*/gi;

/** A URL or header value as logs show it: no retrieval token, no key. */
export const redactToken = (url: string): string => url.replace(FILE_PATH, '$1[token]').replace(SECRET_PARAMS, '$1[redacted]').replace(TOKEN, '[token]');

export function createLogger(config: Pick<Config, 'logLevel' | 'role'>): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { role: config.role },
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', '*.token', '*.download_url', 'secret'], censor: '[redacted]' },
    },
    // Written in the background: a synchronous write of every request's line to a pipe took a
    // sixth of a file request's time. Lines that come while one write is under way go out
    // together with the next; pino writes what is left synchronously when the process exits.
    pino.destination({ dest: 1, sync: false }),
  );
}

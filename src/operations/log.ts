import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config/index.ts';

export type { Logger } from 'pino';

// One JSON line per event on stdout. What could open a door never reaches a line: API keys
// (the Authorization header), retrieval tokens (in file paths and in downloads), webhook secrets.

/** A retrieval token (`<22>.<43>` base64url), also percent-encoded, wherever it stands. */
const TOKEN = /[A-Za-z0-9_-]{22}(?:\.|%2e)[A-Za-z0-9_-]{43}/gi;
/** Whatever follows the file path (matched as loosely as Express routes it: any case, repeated or encoded slashes). */
const FILE_PATH = /(\/download(?:\/|%2f)+)[^?#]*/gi;
/**
 * Query values a client may have put a secret in by mistake: those of any parameter named like a
 * credential (authorization, api_key, apikey, access_token, client_secret, password...), whole.
 */
const SECRET_PARAMS = /([?&;][^=&;]*(?:auth|key|token|secret|passw)[^=&;]*=)[^&;]*/gi;

/** A URL or header value as logs show it: no retrieval token, no key. */
const redactToken = (url: string): string => url.replace(FILE_PATH, '$1[token]').replace(SECRET_PARAMS, '$1[redacted]').replace(TOKEN, '[token]');

const escaped = (char: string) => char.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
const percentEncoded = (char: string) => [...Buffer.from(char)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
/** One character of a secret as a URL may spell it: as it is, or percent-encoded (either case of hex, the pattern ignoring case). */
const spelled = (char: string) => `(?:${escaped(char)}|${percentEncoded(char)})`;

/**
 * redactToken, and also `secrets` (the API keys the service knows) wherever they stand, in any mix
 * of plain and percent-encoded characters: a key a client put in a path or a request id.
 */
export function redactWith(secrets: string[]): (text: string) => string {
  const known = secrets.filter((secret) => secret.length > 0).sort((a, b) => b.length - a.length);
  if (known.length === 0) return redactToken;
  const pattern = new RegExp(known.map((secret) => [...secret].map(spelled).join('')).join('|'), 'gi');
  return (text) => redactToken(text.replace(pattern, '[redacted]'));
}

export function createLogger(config: Pick<Config, 'logLevel' | 'role'>): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { role: config.role },
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', '*.token', '*.download_url', 'secret'], censor: '[redacted]' },
    },
    stdoutByTurn(),
  );
}

/** Lines kept until the end of a turn of the event loop; sonic-boom writes sooner only when a turn logs more. */
const TURN_BYTES = 8 * 1024;

/**
 * Standard output, written once per turn of the event loop with all the lines of that turn. A
 * write per line (each request logs one) cost a file link behind nginx a sixth of its time,
 * mostly in waking whoever reads the other end of the pipe, or the thread pool when handed to
 * it. Warnings and errors go out at once, since the process may end before the turn does.
 */
function stdoutByTurn(): DestinationStream {
  const out = pino.destination({ dest: 1, sync: true, minLength: TURN_BYTES });
  let flushing = false;
  const flush = () => {
    flushing = false;
    out.flush();
  };
  const stream = {
    // pino then tells the stream the level of each line before writing it.
    [Symbol.for('pino.metadata')]: true,
    lastLevel: 0,
    write(line: string) {
      out.write(line);
      if (stream.lastLevel >= pino.levels.values.warn!) flush();
      else if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    },
  };
  return stream;
}

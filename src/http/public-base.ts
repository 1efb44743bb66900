import type { Request } from 'express';
import type { Config } from '../config/index.ts';

/** A Host that names a host: a name, IPv4 or [IPv6], and a port. Anything else is not put into a link. */
const HOST = /^(?:[\w.~-]+|\[[\d.:a-f]+\])(?::\d{1,5})?$/i;

/**
 * Where the request reached the service: its Host when that names a host, else the address of
 * the socket it came in on (an HTTP/1.0 request may send no Host; a hostile one, control bytes
 * that would go into the links and the served contract as they are).
 */
function requestHost(req: Request): string {
  const host = req.get('host');
  if (host && HOST.test(host)) return host;
  const { localAddress = '127.0.0.1', localPort } = req.socket;
  return `${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${localPort}`;
}

/** The origin (and BASE_PATH) that links in responses are built on: PUBLIC_BASE_URL, else the request's. */
export function publicBase(req: Request, config: Config): string {
  return `${config.publicBaseUrl ?? `${req.protocol}://${requestHost(req)}`}${config.basePath}`;
}

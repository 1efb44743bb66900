import { lookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Unless ALLOW_PRIVATE_ADDRESSES is set, sources may only be on public unicast addresses: nothing
// on loopback, private, link-local, unique-local, multicast, unspecified, carrier-grade NAT, nor
// the IPv6 forms that embed one of those (IPv4-mapped, NAT64, 6to4, Teredo). The check runs on
// the addresses the connection is made to, so a DNS answer that changes between a check and the
// connect cannot slip through.

export const BLOCKED_ADDRESS = 'EBLOCKEDADDRESS';

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
  return parsed.range() === 'unicast';
}

/** The IP of a URL whose host is an address rather than a name (the URL parser has normalised it). */
export function ipLiteralOf(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(host) ? host : null;
}

/** Hosts that are private whatever DNS says, and so can be refused before any lookup. */
export function isObviouslyPrivate(url: URL): boolean {
  const literal = ipLiteralOf(url);
  if (literal) return !isPublicAddress(literal);
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost') || !host.includes('.');
}

export class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS;
  constructor(readonly host: string) {
    super(`${host} is on a private or loopback address`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net.connect that fails when any address of the name is not public. */
export function publicOnlyLookup(hostname: string, options: LookupAllOptions | object, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    if (addresses.length === 0 || addresses.some((entry) => !isPublicAddress(entry.address))) {
      return callback(new BlockedAddressError(hostname), []);
    }
    if ((options as { all?: boolean }).all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

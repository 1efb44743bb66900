import { lookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Sources may only be on public unicast addresses, unless ALLOW_PRIVATE_ADDRESSES says otherwise
// (all of them, or listed ranges): nothing on loopback, private, link-local, unique-local,
// multicast, unspecified or carrier-grade NAT addresses, nor the IPv6 forms that embed an IPv4
// address (IPv4-mapped, NAT64, 6to4, Teredo). The check runs on the addresses the connection is
// made to, so a DNS answer that changes between a check and the connect cannot slip through.

export const BLOCKED_ADDRESS = 'EBLOCKEDADDRESS';

export type PrivateAllowance = boolean | string[];

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

function normalise(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const parsed = ipaddr.parse(address);
  return parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress() ? parsed.toIPv4Address() : parsed;
}

function toRange(entry: string): Range {
  if (ipaddr.isValidCIDR(entry)) return ipaddr.parseCIDR(entry);
  const address = normalise(entry);
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}

/** The IP of a URL whose host is an address rather than a name (the URL parser has normalised it). */
function ipLiteralOf(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(host) ? host : null;
}

class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS;
  constructor(readonly host: string) {
    super(`${host} is on a private or loopback address`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export class AddressPolicy {
  private readonly ranges: Range[];

  constructor(private readonly allowance: PrivateAllowance) {
    this.ranges = Array.isArray(allowance) ? allowance.map(toRange) : [];
  }

  get allowsEverything(): boolean {
    return this.allowance === true;
  }

  allows(address: string): boolean {
    if (this.allowance === true) return true;
    if (!ipaddr.isValid(address)) return false;
    const parsed = normalise(address);
    if (parsed.range() === 'unicast') return true;
    return this.ranges.some(([base, bits]) => base.kind() === parsed.kind() && parsed.match(base, bits));
  }

  /** Refused before any lookup: an address literal the policy does not allow, or a local-only name. */
  refusesOnItsFace(url: URL): boolean {
    const literal = ipLiteralOf(url);
    if (literal) return !this.allows(literal);
    if (this.allowance !== false) return false;
    const host = url.hostname.toLowerCase().replace(/\.$/, '');
    return host === 'localhost' || host.endsWith('.localhost') || !host.includes('.');
  }

  /** A `lookup` for net.connect that fails when any address of the name is not allowed. */
  readonly lookup = (hostname: string, options: LookupAllOptions | object, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.length === 0 || addresses.some((entry) => !this.allows(entry.address))) {
        return callback(new BlockedAddressError(hostname), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

import { lookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Sources may only be on public unicast addresses, unless ALLOW_PRIVATE_ADDRESSES says otherwise
// (all of them, or listed ranges): nothing on loopback, private, link-local, unique-local,
// multicast, unspecified or carrier-grade NAT addresses, nor any other range ipaddr.js names. The
// check runs on the addresses the connection is made to, so a DNS answer that changes between a
// check and the connect cannot slip through.
//
// IPv6 is public only inside 2000::/3, the one block handed out for global unicast, and outside
// every range ipaddr.js names there (6to4, Teredo, documentation, benchmarking, ORCHID...). Of the
// forms that carry an IPv4 address, two are judged by that address, because it is where the
// connection goes: IPv4-mapped ::ffff:0:0/96 (the kernel connects to the IPv4 address itself; a
// listed IPv4 range allows it too) and NAT64 64:ff9b::/96 (a translator connects to it, and
// translates only public addresses, so a listed IPv4 range does not extend to it). Every other one
// is refused outright unless its own IPv6 range is listed: IPv4-compatible ::/96 (deprecated, and
// no stack connects to the IPv4 address), ::ffff:0:0:0/96 (translators' own), local-use NAT64
// 64:ff9b:1::/48, 6to4 2002::/16 and Teredo 2001::/32 (tunnels through third parties).

export const BLOCKED_ADDRESS = 'EBLOCKEDADDRESS';

export type PrivateAllowance = boolean | string[];

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

/**
 * ipaddr.js reads "::a.b.c.d" (IPv4-compatible, as lookups print it) as if it were
 * "::ffff:a.b.c.d"; the WHATWG URL parser, which parsed the source URL, reads it right and
 * spells every IPv6 address in hex groups, which ipaddr.js does read right.
 */
function parse(address: string): Address | null {
  if (!ipaddr.isValid(address)) return null;
  if (ipaddr.IPv4.isValid(address)) return ipaddr.parse(address);
  try {
    return ipaddr.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  } catch {
    return null;
  }
}

/** The IPv4 address a NAT64 translator reaches for `address`, for the well-known prefix only. */
function translatedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  return address.match(NAT64) ? new ipaddr.IPv4(address.toByteArray().slice(12)) : null;
}

function isPublic(address: Address): boolean {
  if (address instanceof ipaddr.IPv4) return address.range() === 'unicast';
  if (address.isIPv4MappedAddress()) return isPublic(address.toIPv4Address());
  const translated = translatedIPv4(address);
  if (translated) return isPublic(translated);
  return address.match(GLOBAL_UNICAST) && address.range() === 'unicast';
}

function normalise(address: Address): Address {
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

function toRange(entry: string): Range {
  if (ipaddr.isValidCIDR(entry)) return ipaddr.parseCIDR(entry);
  const address = parse(entry);
  if (!address) throw new Error(`${entry} is not an IP address or CIDR range`);
  const single = normalise(address);
  return [single, single.kind() === 'ipv4' ? 32 : 128];
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
    const parsed = parse(address);
    if (!parsed) return false;
    if (isPublic(parsed)) return true;
    return [parsed, normalise(parsed)].some((candidate) => this.ranges.some(([base, bits]) => base.kind() === candidate.kind() && candidate.match(base, bits)));
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

import { AddressPolicy } from '../../src/net/address-policy.ts';

// Every class of address a public deployment must not fetch from, as the policy classes them.

describe('the address classes', () => {
  const closed = new AddressPolicy(false);

  test.each([
    ['loopback', ['127.0.0.1', '127.255.0.9', '::1']],
    ['private', ['10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1']],
    ['link-local', ['169.254.169.254', 'fe80::1']],
    ['unique-local', ['fc00::1', 'fd12:3456::1']],
    ['multicast', ['224.0.0.1', '239.255.255.250', 'ff02::1']],
    ['unspecified', ['0.0.0.0', '::']],
    ['carrier-grade NAT', ['100.64.0.1']],
    ['IPv4-mapped IPv6 of loopback and private', ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1']],
    ['NAT64 of a non-public IPv4 address', ['64:ff9b::7f00:1', '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::10.0.0.1']],
    // Refused outright, whatever IPv4 address they carry.
    ['IPv4-compatible IPv6 (::/96)', ['::7f00:1', '::127.0.0.1', '::a00:1', '::808:808', '::8.8.8.8']],
    ['IPv4-translated IPv6 (::ffff:0:0:0/96)', ['::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:0:808:808']],
    ['local-use NAT64 (64:ff9b:1::/48)', ['64:ff9b:1::7f00:1', '64:ff9b:1::808:808']],
    ['6to4 (2002::/16)', ['2002:7f00:1::1', '2002:808:808::1']],
    ['Teredo (2001::/32)', ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']],
    ['site-local (fec0::/10)', ['fec0::1', 'feff::1']],
    ['discard (100::/64)', ['100::1']],
    ['documentation', ['2001:db8::1', '3fff::1']],
    ['benchmarking, ORCHID and segment routing', ['2001:2::1', '2001:20::1', '5f00::1']],
    ['IPv6 outside global unicast (2000::/3)', ['4000::1', 'e000::1', '1::1']],
  ])('when an address is %s, then it is refused', (_class, addresses) => {
    for (const address of addresses) expect([address, closed.allows(address)]).toEqual([address, false]);
  });

  test('when an address is public unicast, then it is allowed', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b::8.8.8.8']) {
      expect([address, closed.allows(address)]).toEqual([address, true]);
    }
  });

  test('when ranges are allowed, then only those private addresses pass', () => {
    const some = new AddressPolicy(['192.168.1.0/24', '127.0.0.1']);
    expect(some.allows('192.168.1.77')).toBe(true);
    expect(some.allows('127.0.0.1')).toBe(true);
    expect(some.allows('::ffff:127.0.0.1')).toBe(true);
    expect(some.allows('127.0.0.2')).toBe(false);
    expect(some.allows('10.0.0.1')).toBe(false);
  });

  test('when an IPv4 range is allowed, then only the IPv4-mapped form of its addresses is, no other IPv6 form', () => {
    const loopback = new AddressPolicy(['127.0.0.1']);
    expect(loopback.allows('::ffff:7f00:1')).toBe(true);
    for (const address of ['::7f00:1', '::127.0.0.1', '::ffff:0:7f00:1', '64:ff9b::7f00:1', '64:ff9b:1::7f00:1', '2002:7f00:1::1']) {
      expect([address, loopback.allows(address)]).toEqual([address, false]);
    }
  });

  test('when an IPv6 range is allowed, then the forms refused outright in it are allowed', () => {
    const compatible = new AddressPolicy(['::/96', '2002::/16']);
    expect(compatible.allows('::7f00:1')).toBe(true);
    expect(compatible.allows('::127.0.0.1')).toBe(true);
    expect(compatible.allows('2002:7f00:1::1')).toBe(true);
    expect(compatible.allows('::1:0:0:1')).toBe(false);
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy } from '../src/sources/address-policy.ts';
import { startTestService, type Download, type TestService } from './support/api.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';

// Every class of address a public deployment must not fetch from. The fixture server on 127.0.0.1
// stands for "something private": each test also checks it was never reached.

type Problem = { errors?: { field: string }[] };

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
    ['NAT64 and 6to4 forms', ['64:ff9b::7f00:1', '2002:7f00:1::1']],
  ])('when an address is %s, then it is refused', (_class, addresses) => {
    for (const address of addresses) expect([address, closed.allows(address)]).toEqual([address, false]);
  });

  test('when an address is public unicast, then it is allowed', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8']) {
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
});

describe('POST /downloads without private addresses', () => {
  let app: TestService;
  let source: FixtureServer;
  let port: string;

  beforeAll(async () => {
    [app, source] = await Promise.all([startTestService({ allowPrivateAddresses: false }), startFixtureServer()]);
    source.file('/clip.mp4', mediaPath('clip.mp4'));
    port = new URL(source.origin).port;
  });

  afterAll(async () => {
    await source?.close();
    await app?.stop();
  });

  test.each([
    ['dotted loopback', (p: string) => `http://127.0.0.1:${p}/clip.mp4`],
    ['decimal loopback', (p: string) => `http://2130706433:${p}/clip.mp4`],
    ['octal loopback', (p: string) => `http://0177.0.0.1:${p}/clip.mp4`],
    ['hexadecimal loopback', (p: string) => `http://0x7f.0x0.0x0.0x1:${p}/clip.mp4`],
    ['short loopback', (p: string) => `http://127.1:${p}/clip.mp4`],
    ['bracketed IPv6 loopback', (p: string) => `http://[::1]:${p}/clip.mp4`],
    ['IPv4-mapped loopback', (p: string) => `http://[::ffff:127.0.0.1]:${p}/clip.mp4`],
    ['NAT64 loopback', (p: string) => `http://[64:ff9b::7f00:1]:${p}/clip.mp4`],
    ['localhost', (p: string) => `http://localhost:${p}/clip.mp4`],
    ['a .localhost name', (p: string) => `http://media.localhost:${p}/clip.mp4`],
    ['private', () => 'http://10.1.2.3/clip.mp4'],
    ['private 192.168', () => 'http://192.168.0.10/clip.mp4'],
    ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
    ['unique-local IPv6', () => 'http://[fd00::1]/clip.mp4'],
    ['unspecified', (p: string) => `http://0.0.0.0:${p}/clip.mp4`],
  ])('when the URL is %s, then 400 names the url and the source is never contacted', async (_case, url) => {
    const res = await app.http.createDownload({ url: url(port) });
    expect(res.status).toBe(400);
    expect((res.body as Problem).errors?.map((error) => error.field)).toContain('/body/url');
    expect(source.requests).toHaveLength(0);
  });
});

describe('downloads that lead to a private address', () => {
  let app: TestService;
  let source: FixtureServer;
  // A second loopback address, outside the one range this service allows.
  let hidden: http.Server;
  let hiddenHits = 0;
  let hiddenOrigin: string;

  beforeAll(async () => {
    [app, source] = await Promise.all([startTestService({ allowPrivateAddresses: ['127.0.0.1/32'] }), startFixtureServer()]);
    hidden = http.createServer((_req, res) => {
      hiddenHits += 1;
      res.end('secret');
    });
    await new Promise<void>((resolve) => hidden.listen(0, '127.0.0.2', resolve));
    hiddenOrigin = `http://127.0.0.2:${(hidden.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => hidden?.close(resolve));
    await source?.close();
    await app?.stop();
  });

  async function failureOf(url: string): Promise<Download> {
    const created = await app.http.createDownload({ url });
    expect(created.status).toBe(202);
    return app.waitForStatus((created.body as Download).id, ['completed', 'failed']);
  }

  test('when the allowed source redirects to a private address, then the download fails as blocked_address there', async () => {
    const done = await failureOf(source.redirect('/hop', `${hiddenOrigin}/video.mp4`));
    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'blocked_address', retryable: false } });
    expect(hiddenHits).toBe(0);
  });

  test('when a playlist names a segment on a private address, then it is not fetched', async () => {
    const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n${hiddenOrigin}/seg0.ts\n#EXT-X-ENDLIST\n`;
    const done = await failureOf(source.content('/list.m3u8', playlist));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
    expect(hiddenHits).toBe(0);
  });

  test('when a page points at a video on a private address, then it is not fetched', async () => {
    const page = `<!doctype html><html><head><title>x</title></head><body><video src="${hiddenOrigin}/v.mp4"></video></body></html>`;
    const done = await failureOf(source.content('/page.html', page));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
    expect(hiddenHits).toBe(0);
  });

  test('when a host name resolves to an address outside the allowed ranges, then the connection is refused at lookup', async () => {
    // localhost passes the check at create (it is a name, and some private range is allowed), but the
    // lookup behind the connection finds 127.0.0.1 or ::1, neither of which is in the allowed range.
    const only2 = await startTestService({ allowPrivateAddresses: ['127.0.0.2/32'] });
    try {
      source.file('/direct.mp4', mediaPath('clip.mp4'));
      const created = await only2.http.createDownload({ url: `http://localhost:${new URL(source.origin).port}/direct.mp4` });
      const done = await only2.waitForStatus((created.body as Download).id, ['completed', 'failed']);
      expect(done).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
      expect(source.requestsFor('/direct.mp4')).toHaveLength(0);
    } finally {
      await only2.stop();
    }
  });
});

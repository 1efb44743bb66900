import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestService, type Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';

// Downloads that lead to an address a public deployment must not fetch from. The fixture server on
// 127.0.0.1 stands for "something private": each test also checks it was never reached. The classes
// of address themselves are tested in test/unit/address-policy.test.ts.

type Problem = { errors?: { field: string; message: string }[] };

describe('POST /downloads without private addresses', () => {
  const { app, source } = useService({ allowPrivateAddresses: false });
  let port: string;

  beforeAll(() => {
    source.file('/clip.mp4', mediaPath('clip.mp4'));
    port = new URL(source.origin).port;
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
    ['unspecified IPv6', (p: string) => `http://[::]:${p}/clip.mp4`],
    ['IPv4-compatible loopback', (p: string) => `http://[::127.0.0.1]:${p}/clip.mp4`],
    ['IPv4-compatible loopback in hex', (p: string) => `http://[::7f00:1]:${p}/clip.mp4`],
    ['IPv4-compatible public address', () => 'http://[::8.8.8.8]/clip.mp4'],
    ['IPv4-translated loopback', (p: string) => `http://[::ffff:0:127.0.0.1]:${p}/clip.mp4`],
    ['NAT64 cloud metadata', () => 'http://[64:ff9b::169.254.169.254]/latest/meta-data/'],
    ['local-use NAT64 loopback', (p: string) => `http://[64:ff9b:1::7f00:1]:${p}/clip.mp4`],
    ['6to4 loopback', (p: string) => `http://[2002:7f00:1::1]:${p}/clip.mp4`],
    ['6to4 of a public address', () => 'http://[2002:808:808::1]/clip.mp4'],
    ['Teredo', () => 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/clip.mp4'],
    ['site-local IPv6', () => 'http://[fec0::1]/clip.mp4'],
    ['discard IPv6', () => 'http://[100::1]/clip.mp4'],
    ['documentation IPv6', () => 'http://[2001:db8::1]/clip.mp4'],
  ])('when the URL is %s, then 400 names the url and the source is never contacted', async (_case, url) => {
    const res = await app.http.createDownload({ url: url(port) });
    expect(res.status).toBe(400);
    expect((res.body as Problem).errors).toContainEqual({ field: '/body/url', message: 'must not point to a private or loopback address' });
    expect(source.requests).toHaveLength(0);
  });
});

describe('downloads that lead to a private address', () => {
  const { app, source } = useService({ allowPrivateAddresses: ['127.0.0.1/32'] });
  // A second loopback address, outside the one range this service allows.
  let hidden: http.Server;
  let hiddenHits = 0;
  let hiddenOrigin: string;

  beforeAll(async () => {
    hidden = http.createServer((_req, res) => {
      hiddenHits += 1;
      res.end('secret');
    });
    await new Promise<void>((resolve) => hidden.listen(0, '127.0.0.2', resolve));
    hiddenOrigin = `http://127.0.0.2:${(hidden.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => hidden?.close(resolve));
  });

  async function outcomeOf(url: string): Promise<Download> {
    const created = await app.http.createDownload({ url });
    expect(created.status).toBe(202);
    return app.waitForStatus((created.body as Download).id, ['completed', 'failed']);
  }

  test('when the allowed source redirects to a private address, then the download fails as blocked_address there', async () => {
    const done = await outcomeOf(source.redirect('/hop', `${hiddenOrigin}/video.mp4`));
    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'blocked_address', retryable: false } });
    expect(hiddenHits).toBe(0);
  });

  test.each([
    ['IPv4-compatible', (port: number) => `http://[::127.0.0.1]:${port}`],
    ['IPv4-translated', (port: number) => `http://[::ffff:0:127.0.0.1]:${port}`],
    ['NAT64', (port: number) => `http://[64:ff9b::127.0.0.1]:${port}`],
    ['6to4', (port: number) => `http://[2002:7f00:1::1]:${port}`],
  ])('when the allowed source redirects to its own address in %s form, then the download fails as blocked_address there', async (form, origin) => {
    source.file('/own.mp4', mediaPath('clip.mp4'));
    const done = await outcomeOf(source.redirect(`/hop-${form}`, `${origin(Number(new URL(source.origin).port))}/own.mp4`));
    expect(done).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'blocked_address', retryable: false } });
    expect(source.requestsFor('/own.mp4')).toHaveLength(0);
  });

  test('when the allowed source redirects to its own address IPv4-mapped, then the download completes, and to a private one mapped, then it is blocked', async () => {
    source.file('/mapped.mp4', mediaPath('clip.mp4'));
    const own = await outcomeOf(source.redirect('/hop-mapped', `http://[::ffff:127.0.0.1]:${new URL(source.origin).port}/mapped.mp4`));
    expect(own.status).toBe('completed');
    const hiddenPort = new URL(hiddenOrigin).port;
    const hidden = await outcomeOf(source.redirect('/hop-mapped-hidden', `http://[::ffff:127.0.0.2]:${hiddenPort}/video.mp4`));
    expect(hidden).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
    expect(hiddenHits).toBe(0);
  });

  test('when a playlist names a segment on a private address, then it is not fetched', async () => {
    const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n${hiddenOrigin}/seg0.ts\n#EXT-X-ENDLIST\n`;
    const done = await outcomeOf(source.content('/list.m3u8', playlist));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'blocked_address' } });
    expect(hiddenHits).toBe(0);
  });

  test('when a page points at a video on a private address, then it is not fetched', async () => {
    const page = `<!doctype html><html><head><title>x</title></head><body><video src="${hiddenOrigin}/v.mp4"></video></body></html>`;
    const done = await outcomeOf(source.content('/page.html', page));
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

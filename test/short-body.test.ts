import { readFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import { startTestService, type TestService } from './support/api.ts';
import { mediaPath } from './support/media.ts';
import { downloadToEnd, expectNothingStored } from './support/outcomes.ts';

// A source that declares more bytes than it sends and closes the connection while the service has
// not read its body yet: the client once asserted on such a close, from a socket listener, which
// ended the whole process.

let app: TestService;
let source: net.Server;
let url: string;

beforeAll(async () => {
  const clip = await readFile(mediaPath('clip.mp4'));
  source = net.createServer((socket) => {
    socket.once('data', (request) => {
      // /tiny.mp4 closes within the first KiB, which is read to tell what the URL is.
      const bytes = clip.subarray(0, request.toString('latin1').startsWith('GET /tiny.mp4') ? 500 : 70_016);
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nContent-Length: ${bytes.length + 100_000}\r\nConnection: close\r\n\r\n`);
      socket.end(bytes);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
  app = await startTestService({ maxAttempts: 1 });
});

afterAll(async () => {
  await app?.stop();
  await new Promise((resolve) => source?.close(resolve));
});

test.each(['/short.mp4', '/tiny.mp4'])(
  'when sources close the connection 100 000 bytes short of their Content-Length (%s), then each download fails as source_unreachable and the service lives on',
  async (path) => {
    for (let run = 0; run < 5; run++) {
      const done = await downloadToEnd(app, { url: url + path });
      expect(done).toMatchObject({ status: 'failed', error: { code: 'source_unreachable', retryable: true } });
      await expectNothingStored(app, done.id);
    }
    expect((await app.http.getDownload('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  },
);

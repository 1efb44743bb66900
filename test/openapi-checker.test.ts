import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { parse as parseYaml } from 'yaml';
import { expectMatchesSpec } from './support/openapi.ts';

type Examples = Record<'QueuedDownload' | 'CompletedDownload' | 'FailedDownload', { value: Record<string, unknown> }>;
const spec = parseYaml(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')) as { components: { examples: Examples } };
const examples = spec.components.examples;

const json = { 'content-type': 'application/json; charset=utf-8' };

// The checker on bodies and headers alone is tested in test/unit/openapi-checker.test.ts; this one needs a socket.
describe('openapi checker', () => {
  test('when a real HTTP response is checked through supertest, then its method comes from the request', async () => {
    const server = http.createServer((req, res) => {
      if (req.url?.startsWith('/downloads/')) {
        res.writeHead(200, json).end(JSON.stringify(examples.CompletedDownload.value));
      } else {
        res.writeHead(202, { ...json, Location: '/downloads/x' }).end(JSON.stringify({ id: 'not-a-uuid' }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const good = await supertest(base).get('/downloads/6f1c1a0e-5d7a-4f6e-9a53-2f0b7c1d9e11');
      expect(() => expectMatchesSpec(good, '/downloads/{download_uuid}')).not.toThrow();
      expect(() => expectMatchesSpec(good, '/downloads')).toThrow(/is not an instance of \/downloads/);
      const bad = await supertest(base).post('/downloads').send({ url: 'http://127.0.0.1/x.mp4' });
      expect(() => expectMatchesSpec(bad, '/downloads')).toThrow(/POST \/downloads answered 202[\s\S]*body\/id must match format "uuid"/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import send from 'send';

// A plain file server (ranges, validators, keep-alive) in a process of its own: the origin that
// downloads come from, and the reference that retrieval is measured against when nginx is absent.
// `tsx bench/servers/static.ts ROOT [LATENCY_MS]`; LATENCY_MS delays every response, like a
// distant server would.

const [root, latency = '0'] = process.argv.slice(2);
if (!root) throw new Error('usage: static.ts ROOT [LATENCY_MS]');
const latencyMs = Number(latency);

/** Answers after the latency, as a distant server would. */
async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (latencyMs > 0) await sleep(latencyMs);
  const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://origin').pathname);
  send(req, pathname, { root, dotfiles: 'allow' })
    .on('error', (error: { status?: number }) => {
      res.statusCode = error.status ?? 500;
      res.end();
    })
    .pipe(res);
}

const server = http.createServer((req, res) => void serve(req, res));
server.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});

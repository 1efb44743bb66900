import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A reverse proxy on 127.0.0.1 that passes every request through to `target` with its Host header
// untouched (so the service builds its links to the proxy), except that it drops the connection
// of the first file response (GET /download/...) half-way through its body, or of the first event
// stream after its first event, as a flaky network would.

export type ProxiedRequest = {
  path: string;
  range: string | undefined;
  ifRange: string | undefined;
  lastEventId: string | undefined;
};

export type CutOptions = {
  /** Which response loses its connection: the first file, or the first event stream. */
  cut: 'file' | 'events';
  /** Runs after the cut bytes went through and before the connection drops, so before the client can come back. */
  onCut?: () => Promise<void>;
};

export type CuttingProxy = {
  url: string;
  /** Requests of the kind being cut (files or event streams), in order. */
  readonly requests: readonly ProxiedRequest[];
  /** Body bytes of the cut response that got through before the cut. */
  readonly cutAfter: number | undefined;
  /** The id of the last event that got through before the cut, when event streams are cut. */
  readonly cutAfterEventId: string | undefined;
  /** Refuses connections for `ms` (nothing listens on the port), as a restarting server would. */
  refuse(ms: number): Promise<void>;
  close(): Promise<void>;
};

export async function startCuttingProxy(target: string, { cut, onCut }: CutOptions): Promise<CuttingProxy> {
  const requests: ProxiedRequest[] = [];
  let cutAfter: number | undefined;
  let cutAfterEventId: string | undefined;
  let claimed = false;
  const server = http.createServer((req, res) => {
    const isFile = req.method === 'GET' && req.url!.startsWith('/download/');
    const isEvents = req.method === 'GET' && /^\/(downloads|collections)\//.test(req.url!) && (req.headers.accept ?? '').includes('text/event-stream');
    const watched = cut === 'file' ? isFile : isEvents;
    if (watched) {
      requests.push({
        path: req.url!,
        range: req.headers.range,
        ifRange: req.headers['if-range'] as string | undefined,
        lastEventId: req.headers['last-event-id'] as string | undefined,
      });
    }
    const cutting = watched && !claimed;
    if (cutting) claimed = true;
    const upstream = http.request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      if (!cutting) {
        answer.pipe(res);
        return;
      }
      const half = Math.floor(Number(answer.headers['content-length']) / 2);
      // latin1 keeps one character per byte, so positions in it are byte counts.
      let head = '';
      let through = 0;
      answer.on('data', (chunk: Buffer) => {
        if (cutAfter !== undefined) return;
        if (cut === 'events') head += chunk.toString('latin1');
        // A file: half its bytes. An event stream: up to the end of its first event.
        const limit = cut === 'file' ? half : head.includes('\n\n') ? head.indexOf('\n\n') + 2 : Infinity;
        const part = chunk.subarray(0, limit - through);
        res.write(part);
        through += part.length;
        if (through < limit) return;
        cutAfter = through;
        if (cut === 'events') cutAfterEventId = /^id: (.*)$/m.exec(head.slice(0, limit))?.[1];
        answer.destroy();
        void (onCut?.() ?? Promise.resolve()).then(() => {
          // Flushed first, so that the client really holds what went through before the connection dies.
          res.socket?.end(() => res.socket?.destroy());
        });
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get cutAfter() {
      return cutAfter;
    },
    get cutAfterEventId() {
      return cutAfterEventId;
    },
    async refuse(ms) {
      // The listening socket closes at once; the connections still open finish on their own.
      server.close();
      server.closeIdleConnections();
      await new Promise<void>((resolve) => setImmediate(resolve));
      setTimeout(() => server.listen(port, '127.0.0.1'), ms);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, statSync } from 'node:fs';
import http, { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { scriptFrom, takeStep, type ScriptEntry, type ScriptOptions } from './fixture-script.ts';
import { etagList, parseRange, sameSecond, type ByteRange } from './http-ranges.ts';

// A stand-in for the remote sites the service downloads from: a real HTTP server on loopback whose
// misbehaviour tests script per path, and which remembers what it was asked so tests can check
// how the service talked to it (ranges on resume, retries, redirects).

export type RecordedRequest = {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Path and query exactly as requested. */
  url: string;
  headers: IncomingHttpHeaders;
  range: string | undefined;
  /** Date.now() when the request arrived. */
  receivedAt: number;
  /** Filled in as the response goes out. */
  status?: number;
  /** Body bytes handed to the socket. */
  bytesSent: number;
  /** How the response ended: `cut` by a scripted reset, `stalled` on purpose, `aborted` by the client. */
  outcome?: 'complete' | 'cut' | 'stalled' | 'aborted';
};

export type { Step } from './fixture-script.ts';

export type ServeOptions = ScriptOptions & {
  /** Default from the extension; `null` sends no Content-Type at all (for sniffing tests). */
  contentType?: string | null;
  /** Default derived from the content; `null` sends none. */
  etag?: string | null;
  /** Default: the file's mtime (or when the content was registered); `null` sends none. */
  lastModified?: Date | null;
  /** `false` ignores Range headers and sends no Accept-Ranges, like servers that cannot resume. */
  ranges?: boolean;
  headers?: Record<string, string>;
  /** Throttles every body, so a download stays observable in `downloading`. */
  bytesPerSecond?: number;
};

export type RouteContext = {
  /** 1 for the first request to this path. */
  count: number;
  url: URL;
  record: RecordedRequest;
};

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, context: RouteContext) => void | Promise<void>;

export type FixtureServer = {
  origin: string;
  url(pathAndQuery: string): string;
  /** Serves a file from disk with ranges and validators; returns its URL. */
  file(routePath: string, filePath: string, options?: ServeOptions): string;
  /** Serves every file below `dir` like `file`, at `routePrefix` + its relative path (a generated stream's playlists and segments). */
  directory(routePrefix: string, dir: string): void;
  /** Serves bytes or text from memory (playlists, manifests, pages) like `file`; returns its URL. */
  content(routePath: string, data: string | Buffer, options?: ServeOptions): string;
  /** Always answers `status`; returns its URL. */
  status(routePath: string, status: number, options?: { headers?: Record<string, string>; body?: string }): string;
  redirect(routePath: string, location: string, status?: 301 | 302 | 303 | 307 | 308): string;
  route(routePath: string, handler: RouteHandler): string;
  readonly requests: readonly RecordedRequest[];
  requestsFor(routePath: string): RecordedRequest[];
  /** Errors thrown by route handlers or while serving; a test can assert this stays empty. */
  readonly errors: readonly Error[];
  close(): Promise<void>;
};

const contentTypes: Record<string, string> = {
  '.mp4': 'video/mp4',
  '.m4v': 'video/mp4',
  '.m4a': 'audio/mp4',
  '.m4s': 'video/iso.segment',
  '.webm': 'video/webm',
  '.mkv': 'video/x-matroska',
  '.mov': 'video/quicktime',
  '.ts': 'video/mp2t',
  '.mp3': 'audio/mpeg',
  '.aac': 'audio/aac',
  '.m3u8': 'application/vnd.apple.mpegurl',
  '.mpd': 'application/dash+xml',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

function contentTypeFor(...names: string[]): string {
  for (const name of names) {
    const type = contentTypes[path.extname(name).toLowerCase()];
    if (type) return type;
  }
  return 'application/octet-stream';
}

type Body = { size: number; etag: string; lastModified: Date; read(start: number, end: number): Readable };

/** Resolves true once the chunk reached the socket, false if the connection went away first. */
function writeChunk(res: ServerResponse, chunk: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve(false);
    const onClose = () => resolve(false);
    res.once('close', onClose);
    res.write(chunk, (error) => {
      res.off('close', onClose);
      resolve(!error);
    });
  });
}

async function writeBody(
  res: ServerResponse,
  stream: Readable,
  record: RecordedRequest,
  total: number,
  limit: number | undefined,
  bytesPerSecond: number | undefined,
): Promise<'complete' | 'limit' | 'aborted'> {
  const slice = bytesPerSecond ? Math.max(1, Math.floor(bytesPerSecond / 20)) : Infinity;
  try {
    for await (const data of stream) {
      let chunk = data as Buffer;
      while (chunk.length > 0) {
        const room = limit === undefined ? Infinity : limit - record.bytesSent;
        const piece = chunk.subarray(0, Math.min(chunk.length, slice, room));
        if (piece.length > 0) {
          // A client that went away while the throttle slept takes nothing more: not sent, not counted.
          if (res.destroyed) {
            record.outcome = 'aborted';
            return 'aborted';
          }
          // Counted before the write: with a Content-Length, the client may finish (and the test
          // look at the record) as soon as the last byte lands, before the write callback runs.
          record.bytesSent += piece.length;
          if (record.bytesSent === total) record.outcome = 'complete';
          if (!(await writeChunk(res, piece))) {
            record.outcome = 'aborted';
            return 'aborted';
          }
          if (bytesPerSecond) await sleep((piece.length / bytesPerSecond) * 1000);
        }
        if (limit !== undefined && record.bytesSent >= limit) return 'limit';
        chunk = chunk.subarray(piece.length);
      }
    }
    return 'complete';
  } finally {
    stream.destroy();
  }
}

export async function startFixtureServer(): Promise<FixtureServer> {
  const handlers = new Map<string, RouteHandler>();
  const counts = new Map<string, number>();
  const requests: RecordedRequest[] = [];
  const errors: Error[] = [];
  const stalled = new Set<ServerResponse>();

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    record: RecordedRequest,
    body: Body,
    options: ServeOptions,
    script: ScriptEntry[],
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const step = takeStep(script, method);
    if (step?.delayMs) await sleep(step.delayMs);
    if (step?.status !== undefined) {
      const text = step.body ?? `${step.status} ${STATUS_CODES[step.status] ?? ''}\n`;
      res.writeHead(step.status, { 'Content-Type': 'text/plain; charset=utf-8', ...step.headers });
      res.end(method === 'HEAD' ? undefined : text);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }

    const ranges = options.ranges !== false;
    const etag = options.etag === undefined ? body.etag : options.etag;
    const lastModified = options.lastModified === undefined ? body.lastModified : options.lastModified;
    const contentType = options.contentType === undefined ? contentTypeFor(record.path) : options.contentType;
    const headers: Record<string, string | number> = {};
    if (contentType !== null) headers['Content-Type'] = contentType;
    if (ranges) headers['Accept-Ranges'] = 'bytes';
    if (etag !== null) headers.ETag = etag;
    if (lastModified !== null) headers['Last-Modified'] = lastModified.toUTCString();
    Object.assign(headers, options.headers, step?.headers);

    const ifNoneMatch = req.headers['if-none-match'];
    const ifModifiedSince = req.headers['if-modified-since'];
    const notModified = ifNoneMatch
      ? etag !== null && (ifNoneMatch.trim() === '*' || etagList(ifNoneMatch).includes(etag.replace(/^W\//, '')))
      : ifModifiedSince !== undefined && lastModified !== null && Date.parse(ifModifiedSince) >= Math.floor(lastModified.getTime() / 1000) * 1000;
    if (notModified) {
      res.writeHead(304, headers).end();
      return;
    }

    let range: ByteRange | 'unsatisfiable' | undefined;
    const rangeHeader = req.headers.range;
    if (ranges && rangeHeader) {
      const ifRange = [req.headers['if-range']].flat()[0];
      // If-Range asks for the range only if the representation is unchanged (strong match).
      const current =
        ifRange === undefined ||
        (ifRange.startsWith('"') ? etag !== null && ifRange === etag : lastModified !== null && sameSecond(new Date(ifRange), lastModified));
      if (current) range = parseRange(rangeHeader, body.size);
    }
    if (range === 'unsatisfiable') {
      res.writeHead(416, { ...headers, 'Content-Range': `bytes */${body.size}`, 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(method === 'HEAD' ? undefined : 'Range Not Satisfiable\n');
      return;
    }
    const { start, end } = range ?? { start: 0, end: body.size - 1 };
    const length = Math.max(0, end - start + 1);
    headers['Content-Length'] = length;
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${body.size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (method === 'HEAD' || length === 0) {
      res.end();
      return;
    }

    const cutAt = step?.resetAfterBytes;
    const stallAt = step?.stallAfterBytes;
    const limit = cutAt !== undefined || stallAt !== undefined ? Math.min(cutAt ?? Infinity, stallAt ?? Infinity) : undefined;
    if (limit === 0) res.flushHeaders();
    const result = await writeBody(res, body.read(start, end), record, length, limit, options.bytesPerSecond);
    if (result === 'aborted') return;
    if (result === 'complete') {
      res.end();
      return;
    }
    if (cutAt !== undefined && cutAt <= (stallAt ?? Infinity)) {
      record.outcome = 'cut';
      // end() on the socket flushes what was written, then sends FIN: the client sees exactly
      // `cutAt` bytes of a body that promised more, which is what a dropped connection looks like.
      res.socket?.end();
      return;
    }
    record.outcome = 'stalled';
    stalled.add(res);
    res.once('close', () => stalled.delete(res));
  }

  function withContent(load: () => Body, options: ServeOptions): RouteHandler {
    const script = scriptFrom(options);
    return (req, res, { record }) => serve(req, res, record, load(), options, script);
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const count = (counts.get(url.pathname) ?? 0) + 1;
    counts.set(url.pathname, count);
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      url: req.url ?? '/',
      headers: req.headers,
      range: req.headers.range,
      receivedAt: Date.now(),
      bytesSent: 0,
    };
    requests.push(record);
    // Every way of answering (explicit or implicit headers) goes through writeHead, so the status
    // is on the record as soon as the client can see it.
    const writeHead = res.writeHead.bind(res) as (...args: Parameters<ServerResponse['writeHead']>) => ServerResponse;
    res.writeHead = ((...args: Parameters<ServerResponse['writeHead']>) => {
      record.status = args[0];
      return writeHead(...args);
    }) as ServerResponse['writeHead'];
    // Marked when the server ends the response, before the client can act on its last byte.
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      record.outcome ??= 'complete';
      return end(...args);
    }) as ServerResponse['end'];
    res.on('close', () => {
      record.outcome ??= 'aborted';
    });
    const handler = handlers.get(url.pathname);
    if (!handler) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`no fixture at ${url.pathname}\n`);
      return;
    }
    Promise.resolve()
      .then(() => handler(req, res, { count, url, record }))
      .catch((error: unknown) => {
        errors.push(error instanceof Error ? error : new Error(String(error)));
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('fixture failed\n');
        else res.destroy();
      });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const url = (pathAndQuery: string) => `${origin}${pathAndQuery.startsWith('/') ? '' : '/'}${pathAndQuery}`;

  function register(routePath: string, handler: RouteHandler): string {
    if (!routePath.startsWith('/')) throw new Error(`fixture paths start with "/": ${routePath}`);
    handlers.set(new URL(routePath, origin).pathname, handler);
    return url(routePath);
  }

  const file: FixtureServer['file'] = (routePath, filePath, options = {}) => {
    statSync(filePath); // a typo in a fixture path should fail the test here, not as a 500 later
    const load = (): Body => {
      const stats = statSync(filePath);
      return {
        size: stats.size,
        etag: `"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`,
        lastModified: stats.mtime,
        read: (start, end) => createReadStream(filePath, { start, end }),
      };
    };
    const type = options.contentType === undefined ? contentTypeFor(routePath, filePath) : options.contentType;
    return register(routePath, withContent(load, { ...options, contentType: type }));
  };

  return {
    origin,
    url,
    file,
    directory(routePrefix, dir) {
      for (const relative of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
        const filePath = path.join(dir, relative);
        // URLs use "/" whatever the platform's separator is.
        if (statSync(filePath).isFile()) file(`${routePrefix}/${relative.split(path.sep).join('/')}`, filePath);
      }
    },
    content(routePath, data, options = {}) {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      const body: Body = {
        size: bytes.length,
        etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`,
        lastModified: new Date(),
        read: (start, end) => Readable.from([bytes.subarray(start, end + 1)]),
      };
      return register(
        routePath,
        withContent(() => body, options),
      );
    },
    status(routePath, status, options = {}) {
      return register(routePath, (req, res) => {
        res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...options.headers });
        res.end(req.method === 'HEAD' ? undefined : (options.body ?? `${status} ${STATUS_CODES[status] ?? ''}\n`));
      });
    },
    redirect(routePath, location, status = 302) {
      return register(routePath, (_req, res) => {
        res.writeHead(status, { Location: location }).end();
      });
    },
    route: register,
    requests,
    requestsFor: (routePath) => requests.filter((request) => request.path === routePath),
    errors,
    async close() {
      for (const res of stalled) res.destroy();
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      server.closeAllConnections();
      await closed;
    },
  };
}

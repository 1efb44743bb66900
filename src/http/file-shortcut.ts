import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { RequestObserver } from './observe.ts';
import { sendProblem, toProblem } from './problem.ts';
import type { ServeFile } from './routes/files.ts';

// The file link is the one request a player repeats many times a second (every seek is a range),
// and Express's routing, the validator and the JSON body parser cost more than a cached token
// check with X-Accel-Redirect does. So GET and HEAD of /download/{token} in its plain form are
// answered here, before Express, with the same security headers, request log, metrics and
// problems. Only the plain form: one the validator could refuse (a token longer than the contract
// allows), or Express route differently (other case, a trailing slash, percent-encoding), or a
// request with a body, goes on to Express and the validator as any other request. A query is no
// reason to: the file link ignores any (players and caches add their own, such as `?t=123`).

/** The characters of a token (base64url and the dot between its parts), at most the contract's 200. */
const PLAIN_TOKEN = /^[\w.-]{1,200}$/;

type Shortcut = {
  basePath: string;
  /** Helmet's headers, the same middleware as Express's. */
  secure: (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
  observer: RequestObserver;
  /** The contract's operation ids, by `METHOD /path` as Express routes it. */
  operationIds: Map<string, string>;
  serve: ServeFile;
};

/** `app` with GET and HEAD of plain file links answered ahead of it. */
export function withFileShortcut(app: RequestListener, { basePath, secure, observer, operationIds, serve }: Shortcut): RequestListener {
  const prefix = `${basePath}/download/`;
  const operations = { GET: operationIds.get('GET /download/:token'), HEAD: operationIds.get('HEAD /download/:token') };
  const ignore = () => {};
  return (req, res) => {
    const operation = req.method === 'GET' || req.method === 'HEAD' ? operations[req.method] : undefined;
    const token = req.url?.startsWith(prefix) ? req.url.slice(prefix.length).split('?', 1)[0]! : '';
    if (!operation || !PLAIN_TOKEN.test(token) || req.headers['content-length'] || req.headers['transfer-encoding']) {
      app(req, res);
      return;
    }
    secure(req, res, ignore);
    observer.observe(req, res, operation);
    serve(token, req, res).catch((error: unknown) => {
      // As Express's own last handler does once the answer has begun: only the connection can say so.
      if (res.headersSent) req.socket.destroy();
      else sendProblem(res, toProblem(error, req));
    });
  };
}

import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import express, { type RequestHandler } from 'express';

// express-openapi-validator and the body parser prepare and compile on first use, on the event loop
// (docs/performance.md). So before the server listens they are handed made-up requests for each
// operation of the contract, without a socket; never answered: what counts is what is built.

type Media = { example?: unknown; examples?: Record<string, { value?: unknown }> };
type Operation = { operationId?: string; requestBody?: { content?: Record<string, Media> } };
type Spec = { paths: Record<string, Record<string, Operation>> };

/**
 * The bodies to send an operation: none, then its examples under each way to name their type (the
 * validator builds one validator per Content-Type, charset and all). Each example twice: the
 * formats are regular expressions, some large (uri), which V8 compiles on their first run and
 * again, to machine code, on their second.
 */
function bodies(operation: Operation): { contentType?: string; body?: string }[] {
  const made: { contentType?: string; body?: string }[] = [{}];
  for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
    const examples = [...(media.example === undefined ? [] : [media.example]), ...Object.values(media.examples ?? {}).map((example) => example.value)];
    for (const contentType of [type, `${type}; charset=utf-8`]) {
      for (const example of examples.length ? examples : [{}]) {
        const body = JSON.stringify(example);
        made.push({ contentType, body }, { contentType, body });
      }
    }
  }
  return made;
}

/** `/downloads/{download_uuid}` as a request could name it; the value need not be valid, only present. */
function concretePath(basePath: string, route: string): string {
  return basePath + route.replace(/\{[^}]+\}/g, 'warm-up');
}

function madeUpRequest(method: string, url: string, { contentType, body }: { contentType?: string; body?: string }): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = method.toUpperCase();
  req.url = url;
  const bytes = body === undefined ? undefined : Buffer.from(body);
  req.headers = { host: 'warm-up', ...(bytes && contentType ? { 'content-type': contentType, 'content-length': String(bytes.length) } : {}) };
  if (bytes) req.push(bytes);
  req.push(null);
  return req;
}

/**
 * Runs made-up requests of every operation in `spec` (with each example body, under every way to
 * name its type) through `bodyParsers` (routed below `basePath`, as the service routes them) and the `validator`'s handlers, so that the validator has
 * prepared and compiled everything before a real request comes. The validator's
 * `pathParamsMiddleware` is left out: it registers the parameters on the app of the first request
 * it sees, which must be the service's own.
 */
export async function warmUpValidator(validator: RequestHandler[], bodyParsers: RequestHandler, spec: Spec, basePath: string): Promise<void> {
  const handlers = validator.filter((handler) => handler.name !== 'pathParamsMiddleware');
  const app = express();
  app.use(basePath || '/', bodyParsers);
  app.use(...handlers);
  // Express's own entry (the one an http.Server calls, with the end of the chain as a callback).
  const handle = (app as unknown as { handle(req: IncomingMessage, res: ServerResponse, done: () => void): void }).handle.bind(app);
  for (const [route, operations] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!operation?.operationId) continue;
      for (const made of bodies(operation)) {
        const req = madeUpRequest(method, concretePath(basePath, route), made);
        const res = new ServerResponse(req);
        // Whatever the validator makes of the request (it is rarely valid), the chain ends here.
        await new Promise<void>((resolve) => handle(req, res, () => resolve()));
      }
    }
  }
}

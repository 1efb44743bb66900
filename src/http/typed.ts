import type { Response } from 'express';
import type { paths } from '../../generated/api.ts';

// Handlers answer through these helpers, whose types come from the spec: a body that does not
// match the documented response for that status does not compile.

type Operation<P extends keyof paths, M extends keyof paths[P]> = paths[P][M];
type Responses<P extends keyof paths, M extends keyof paths[P]> = Operation<P, M> extends { responses: infer R } ? R : never;

export type JsonBody<P extends keyof paths, M extends keyof paths[P], S extends keyof Responses<P, M>> = Responses<P, M>[S] extends {
  content: { 'application/json': infer B };
}
  ? B
  : never;

export type RequestBody<P extends keyof paths, M extends keyof paths[P]> =
  Operation<P, M> extends {
    requestBody: { content: { 'application/json': infer B } };
  }
    ? B
    : never;

export function sendJson<P extends keyof paths, M extends keyof paths[P], S extends keyof Responses<P, M> & number>(
  res: Response,
  _operation: [P, M],
  status: S,
  body: JsonBody<P, M, S>,
): void {
  res.status(status).json(body);
}

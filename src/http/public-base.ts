import type { Request } from 'express';
import type { Config } from '../config/index.ts';

/** The origin (and BASE_PATH) that links in responses are built on: PUBLIC_BASE_URL, else the request's. */
export function publicBase(req: Request, config: Config): string {
  return `${config.publicBaseUrl ?? `${req.protocol}://${req.get('host')}`}${config.basePath}`;
}

import { readFileSync } from 'node:fs';
import type { RequestListener } from 'node:http';
import path from 'node:path';
import express from 'express';
import helmet from 'helmet';
import * as OpenApiValidator from 'express-openapi-validator';
import { parse } from 'yaml';
import type { Config } from '../config/index.ts';
import { projectRoot } from '../config/paths.ts';
import { owingAnswer } from '../db/deadline.ts';
import type { Lister } from '../collections/expand.ts';
import type { CollectionRepository } from '../collections/repository.ts';
import type { DownloadRepository } from '../downloads/repository.ts';
import type { EventStreams } from '../events/event-streams.ts';
import type { Logger } from '../operations/log.ts';
import type { Metrics } from '../operations/metrics.ts';
import type { Storage } from '../storage/index.ts';
import type { CheckDeps } from '../subscriptions/check.ts';
import { acceptAbsoluteForm } from './absolute-form.ts';
import { ApiKeys } from './auth.ts';
import { withFileShortcut } from './file-shortcut.ts';
import { jsonBody } from './json-bodies.ts';
import { observeRequests } from './observe.ts';
import { plainQuery } from './plain-query.ts';
import { HttpProblem, problemHandler, sendProblem } from './problem.ts';
import { failedKeyAttemptLimit, requestLimit } from './rate-limit.ts';
import { contractRoutes } from './routes/contract.ts';
import { collectionRoutes } from './routes/collections.ts';
import { downloadRoutes } from './routes/downloads.ts';
import { fileRoutes, fileServer } from './routes/files.ts';
import { operationsRoutes } from './routes/operations.ts';
import { subscriptionRoutes } from './routes/subscriptions.ts';
import { webUiRoutes } from './routes/web-ui.ts';
import { warmUpValidator } from './warm-up.ts';

export const MAX_BODY_BYTES = 16 * 1024;
/** A batch may list 100 URLs of 2,048 characters (openapi.yaml): POST /collections alone takes a body of that size. */
export const MAX_BATCH_BODY_BYTES = 256 * 1024;
/**
 * A subscription may bring a yt-dlp archive of 1,048,576 characters (openapi.yaml), each of which
 * JSON writes in up to 6 bytes (`\u00e9`; 12 for one beyond the BMP escaped, which no archive needs):
 * POST /subscriptions takes a body of that size, and 1 MiB more for the rest.
 */
export const MAX_SUBSCRIPTION_BODY_BYTES = 7 * 1024 * 1024;
/** The operations whose bodies may be larger than MAX_BODY_BYTES. */
const BODY_LIMITS: Record<string, number> = { createCollection: MAX_BATCH_BODY_BYTES, createSubscription: MAX_SUBSCRIPTION_BODY_BYTES };

export type AppDeps = {
  downloads: DownloadRepository;
  collections: CollectionRepository;
  /** Reads what a collection's URL holds (a preview runs it in this process). */
  list: Lister;
  /** What a subscription's check needs: a check asked for by a client runs in this process. */
  check: CheckDeps;
  storage: Storage;
  streams: EventStreams;
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** The secret API keys are hashed under; needed when keys are configured. */
  keyHashSecret: Buffer | undefined;
  /** The version of yt-dlp this server extracts sites with; null without one. */
  ytdlpVersion: string | null;
};

type Spec = { paths: Record<string, Record<string, { operationId?: string; requestBody?: object }>> };

/** The contract, with its server set to BASE_PATH so the validator matches paths below it. */
function loadSpec(basePath: string): Spec {
  const spec = parse(readFileSync(path.join(projectRoot, 'openapi.yaml'), 'utf8')) as Spec;
  return { ...spec, servers: [{ url: basePath || '/' }] } as Spec;
}

/** `/downloads/{download_uuid}` as Express routes it: `/downloads/:download_uuid`. */
const routePath = (template: string) => template.replace(/\{(\w+)\}/g, ':$1');

/** The contract's operations, with their paths as Express routes them. */
function operations(spec: Spec): { method: string; route: string; id: string; takesBody: boolean }[] {
  return Object.entries(spec.paths).flatMap(([template, byMethod]) =>
    Object.entries(byMethod).flatMap(([method, operation]) =>
      operation.operationId ? [{ method, route: routePath(template), id: operation.operationId, takesBody: operation.requestBody !== undefined }] : [],
    ),
  );
}

/**
 * `GET /healthz` to `getHealth`, `PATCH /subscriptions/:subscription_id` to `updateSubscription`:
 * the operations served, or refused, before the validator has matched them, named by the contract too.
 */
const operationIds = (spec: Spec) => new Map(operations(spec).map(({ method, route, id }) => [`${method.toUpperCase()} ${route}`, id]));

/** The body parser of each operation that takes a body: a body it refuses is counted under that operation. */
function bodyParsers(spec: Spec): express.Router {
  const router = express.Router();
  for (const { method, route, id } of operations(spec).filter((operation) => operation.takesBody)) {
    router[method as 'post'](route, ...jsonBody(BODY_LIMITS[id] ?? MAX_BODY_BYTES));
  }
  return router;
}

export type App = {
  listener: RequestListener;
  /** Resolves once the validator has compiled what it would otherwise compile on first requests: listen after it. */
  warmedUp: Promise<void>;
};

export function createApp(deps: AppDeps): App {
  const { config } = deps;
  const spec = loadSpec(config.basePath);
  const ids = operationIds(spec);
  const app = express();
  app.disable('x-powered-by');
  // Files carry their own sha256 ETag; JSON answers are too small and too changeable for one.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  // Files are meant to be embedded elsewhere (<video src=download_url>), so other origins may load them.
  const secure = helmet({
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    // A self-hosted service is often reached over plain HTTP on a LAN address, where upgrading
    // the page's requests to HTTPS would leave it without its script and style.
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
  });
  app.use(secure);
  const observer = observeRequests(deps.log, deps.metrics, ids, [...config.apiKeys, ...config.adminApiKeys]);
  app.use(observer.handlers);
  const serveFile = fileServer(deps);

  const api = express.Router();
  api.use(contractRoutes(config));
  api.use(webUiRoutes(config.basePath));
  // Limits and keys apply to the /downloads, /collections and /subscriptions operations only; a retrieval token is its own key.
  // Failed key attempts are limited before the key is checked, and requests after it, so that only
  // a configured key is given a budget of its own.
  const keys = new ApiKeys({ keys: config.apiKeys, adminKeys: config.adminApiKeys, secret: deps.keyHashSecret });
  // One count of failed attempts for every place a key is checked: /metrics answers a guess too.
  // The key is asked of every method there, as on /downloads: an OPTIONS that Express answers by
  // itself would otherwise say what the path serves to whoever asks.
  const failedKeys = failedKeyAttemptLimit(keys, config.rateLimitPerMinute);
  api.use('/metrics', failedKeys, keys.require);
  api.use(operationsRoutes({ downloads: deps.downloads, files: deps.storage.files, metrics: deps.metrics, ytdlpVersion: deps.ytdlpVersion }));
  const limit = requestLimit(keys, config.rateLimitPerMinute);
  api.use('/downloads', failedKeys, keys.require, limit);
  api.use('/collections', failedKeys, keys.require, limit);
  api.use('/subscriptions', failedKeys, keys.require, limit);
  const bodies = bodyParsers(spec);
  api.use(bodies);
  // Only the /downloads, /collections and /subscriptions operations take a query; the file link ignores any, brackets and all.
  const plain = plainQuery(spec);
  api.use('/downloads', plain);
  api.use('/collections', plain);
  api.use('/subscriptions', plain);
  const validator = OpenApiValidator.middleware({
    apiSpec: spec as never,
    validateRequests: { allowUnknownQueryParameters: false },
    // Formats checked to the letter of their standards (uuid, uri), not by a quick look.
    ajvFormats: { mode: 'full' },
    validateResponses: false,
    validateSecurity: false,
  });
  api.use(validator);
  // From here on, a database that stalls is a 503 after DATABASE_ANSWER_MS, not a request left
  // waiting for ever. Set after the body is read: its stream's events would not carry it.
  api.use((_req, _res, next) => owingAnswer(next));
  api.use(downloadRoutes({ ...deps, keys }));
  api.use(collectionRoutes({ ...deps, keys }));
  api.use(subscriptionRoutes({ ...deps, keys }));
  api.use(fileRoutes(serveFile));

  app.use(config.basePath || '/', api);
  app.use((req) => {
    throw new HttpProblem(404, `No such path: ${req.path}`);
  });
  app.use(problemHandler);
  const badTarget = new HttpProblem(400, 'The request target is neither a path nor an http(s) URL with a host this service reads.');
  const listener = acceptAbsoluteForm(
    withFileShortcut(app, { basePath: config.basePath, secure, observer, operationIds: ids, serve: serveFile }),
    (_req, res) => sendProblem(res, badTarget),
  );
  return { listener, warmedUp: warmUpValidator(validator, bodies, spec, config.basePath) };
}

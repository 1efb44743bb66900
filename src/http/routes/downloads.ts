import { Router, type Request } from 'express';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../../config/index.ts';
import type { Prisma } from '../../db/prisma.ts';
import { DownloadCreator } from '../../downloads/create.ts';
import { presentDownload } from '../../downloads/present.ts';
import { DownloadRepository } from '../../downloads/repository.ts';
import { AddressPolicy } from '../../sources/address-policy.ts';
import { HttpProblem } from '../problem.ts';
import { sendJson, type RequestBody } from '../typed.ts';

type DownloadRoutesDeps = { prisma: Prisma; boss: PgBoss; config: Config };

/** The origin (and BASE_PATH) that links in responses are built on. */
function publicBase(req: Request, config: Config): string {
  return `${config.publicBaseUrl ?? `${req.protocol}://${req.get('host')}`}${config.basePath}`;
}

function invalid(field: string, message: string, detail = 'The request is invalid.'): HttpProblem {
  return new HttpProblem(400, detail, {}, [{ field, message }]);
}

/**
 * The schema's `uri` format is RFC 3986 syntax; what the fetcher will use is the WHATWG URL parser,
 * which also refuses what the syntax allows but no request could go to (a port over 65535, no host).
 */
function parseHttpUrl(value: string, field: string): URL {
  try {
    const url = new URL(value);
    if (url.hostname) return url;
  } catch {
    // Answered below, like a URL without a host.
  }
  throw invalid(field, 'must be an http(s) URL with a host');
}

export function downloadRoutes(deps: DownloadRoutesDeps): Router {
  const router = Router();
  const addresses = new AddressPolicy(deps.config.allowPrivateAddresses);
  const downloads = new DownloadRepository(deps.prisma);
  const creator = new DownloadCreator({ downloads, boss: deps.boss });

  router.post('/downloads', async (req, res) => {
    const body = req.body as RequestBody<'/downloads', 'post'>;
    const url = parseHttpUrl(body.url, '/body/url');
    if (body.callback_url !== undefined) parseHttpUrl(body.callback_url, '/body/callback_url');
    // The worker checks every address it connects to; what is private on its face is refused here.
    if (addresses.refusesOnItsFace(url)) {
      throw invalid(
        '/body/url',
        'must not point to a private or loopback address',
        'The URL points to a private or loopback address, which this server does not fetch from.',
      );
    }
    const key = req.get('idempotency-key');
    const result = await creator.create(body, key);
    if (result.kind === 'key_conflict') {
      throw new HttpProblem(409, `Idempotency-Key "${key}" was already used with a different request body.`);
    }
    res.location(`${deps.config.basePath}/downloads/${result.row.id}`);
    sendJson(res, ['/downloads', 'post'], 202, presentDownload(result.row, publicBase(req, deps.config)));
  });

  router.get('/downloads/:download_uuid', async (req, res) => {
    const row = await downloads.find(req.params.download_uuid);
    if (!row) throw new HttpProblem(404, `No download with id ${req.params.download_uuid}.`);
    sendJson(res, ['/downloads/{download_uuid}', 'get'], 200, presentDownload(row, publicBase(req, deps.config)));
  });

  return router;
}

import { Router } from 'express';
import type { Download as Row } from '../../../generated/prisma/client.ts';
import type { Config } from '../../config/index.ts';
import type { DownloadStatus } from '../../core/statuses.ts';
import { cancelDownload } from '../../downloads/cancel.ts';
import { DownloadCreator } from '../../downloads/create.ts';
import { listDownloads } from '../../downloads/list.ts';
import { confirmFile } from '../../downloads/lost-files.ts';
import { presentDownload } from '../../downloads/present.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { EventStreams } from '../../events/event-streams.ts';
import { downloadEvents } from '../../events/kinds.ts';
import type { Metrics } from '../../operations/metrics.ts';
import type { ApiKeys } from '../auth.ts';
import type { Storage } from '../../storage/index.ts';
import { refuseUnlessMade } from '../create-refusals.ts';
import { HttpProblem } from '../problem.ts';
import { publicBase } from '../public-base.ts';
import { refuseWhenStreamsFull, wantsEvents } from '../event-requests.ts';
import { sendJson, type RequestBody } from '../typed.ts';

type DownloadRoutesDeps = {
  downloads: DownloadRepository;
  storage: Storage;
  streams: EventStreams;
  config: Config;
  metrics: Metrics;
  keys: ApiKeys;
};

/** Also the answer for another key's download: that it exists is not revealed. */
function notFound(id: string): HttpProblem {
  return new HttpProblem(404, `No download with id ${id}.`);
}

export function downloadRoutes(deps: DownloadRoutesDeps): Router {
  const router = Router();
  const { downloads, config, keys } = deps;
  const creator = new DownloadCreator({
    downloads,
    maxActivePerKey: config.maxActiveDownloadsPerKey,
    rules: { allowPrivateAddresses: config.allowPrivateAddresses, webhooks: Boolean(config.webhookSecret) },
  });
  const refuseWhenFull = () => refuseWhenStreamsFull(deps.streams);
  const events = downloadEvents(downloads);

  router.post('/downloads', async (req, res) => {
    const body = req.body as RequestBody<'/downloads', 'post'>;
    const key = req.get('idempotency-key');
    const base = publicBase(req, config);
    const result = await creator.create(keys.callerOf(req), body, key, base);
    refuseUnlessMade(result, key, 'downloads');
    if (result.kind === 'created') deps.metrics.created.inc();
    res.location(`${config.basePath}/downloads/${result.row.id}`);
    sendJson(res, ['/downloads', 'post'], 202, presentDownload(result.row, base));
  });

  router.get('/downloads', async (req, res) => {
    // The validator has checked the query and turned it into numbers and arrays.
    const query = req.query as { status?: DownloadStatus[]; limit?: number; cursor?: string; collection_id?: string };
    const page = await listDownloads(deps, keys.callerOf(req), {
      statuses: query.status,
      limit: query.limit ?? 20,
      cursor: query.cursor,
      collectionId: query.collection_id,
    });
    const base = publicBase(req, config);
    sendJson(res, ['/downloads', 'get'], 200, { items: page.rows.map((row) => presentDownload(row, base)), next_cursor: page.nextCursor });
  });

  router.get('/downloads/:download_uuid', async (req, res) => {
    const id = req.params.download_uuid;
    const streaming = wantsEvents(req);
    // Checked before the read, so that a full server costs no query.
    if (streaming) refuseWhenFull();
    const found = await downloads.findFor(id, keys.callerOf(req));
    if (!found) throw notFound(id);
    const row = await confirmFile(deps, found);
    const base = publicBase(req, config);
    if (!streaming) return sendJson(res, ['/downloads/{download_uuid}', 'get'], 200, presentDownload(row, base));
    // Again after the read: requests that arrived together all passed the first check, and only
    // from here to serve() does nothing else run.
    refuseWhenFull();
    deps.streams.serve(res, events, { id, lastEventId: req.get('last-event-id'), present: (changed: Row) => presentDownload(changed, base) }, row);
  });

  router.delete('/downloads/:download_uuid', async (req, res) => {
    const id = req.params.download_uuid;
    const cancelled = await cancelDownload(deps, id, keys.callerOf(req));
    if (!cancelled) throw notFound(id);
    if (cancelled.changed && cancelled.row.status === 'cancelled') {
      deps.metrics.finished.inc({ status: 'cancelled', source: cancelled.row.sourceKind ?? 'unknown' });
    }
    sendJson(res, ['/downloads/{download_uuid}', 'delete'], 200, presentDownload(cancelled.row, publicBase(req, config)));
  });

  return router;
}

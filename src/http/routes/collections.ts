import { Router } from 'express';
import { cancelCollection } from '../../collections/cancel.ts';
import { CollectionCreator } from '../../collections/create.ts';
import type { Lister } from '../../collections/expand.ts';
import { previewCollection } from '../../collections/preview.ts';
import type { Collection } from '../../collections/present.ts';
import { listCollections, readCollection } from '../../collections/read.ts';
import type { CollectionRepository, CollectionStatus } from '../../collections/repository.ts';
import type { Config } from '../../config/index.ts';
import { DownloadError } from '../../core/errors.ts';
import type { EventStreams } from '../../events/event-streams.ts';
import { collectionEvents } from '../../events/kinds.ts';
import type { Storage } from '../../storage/index.ts';
import type { ApiKeys } from '../auth.ts';
import { refuseWhenStreamsFull, wantsEvents } from '../event-requests.ts';
import { refuseUnlessMade } from '../create-refusals.ts';
import { HttpProblem } from '../problem.ts';
import { publicBase } from '../public-base.ts';
import { sendJson, type RequestBody } from '../typed.ts';

type CollectionRoutesDeps = {
  collections: CollectionRepository;
  list: Lister;
  storage: Storage;
  streams: EventStreams;
  config: Config;
  keys: ApiKeys;
};

function notFound(id: string): HttpProblem {
  return new HttpProblem(404, `No collection with id ${id}.`);
}

export function collectionRoutes(deps: CollectionRoutesDeps): Router {
  const router = Router();
  const { collections, config, keys } = deps;
  const rules = { allowPrivateAddresses: config.allowPrivateAddresses, webhooks: Boolean(config.webhookSecret) };
  const creator = new CollectionCreator({ collections, maxActivePerKey: config.maxActiveDownloadsPerKey, maxItems: config.maxCollectionItems, rules });
  const events = collectionEvents(collections);

  router.post('/collections', async (req, res) => {
    const body = req.body as RequestBody<'/collections', 'post'>;
    const key = req.get('idempotency-key');
    const result = await creator.create(keys.callerOf(req), body, key, publicBase(req, config));
    refuseUnlessMade(result, key, 'downloads or collections');
    res.location(`${config.basePath}/collections/${result.row.id}`);
    sendJson(res, ['/collections', 'post'], 202, (await readCollection(collections, result.row.id, null))!);
  });

  router.post('/collections/preview', async (req, res) => {
    const body = req.body as RequestBody<'/collections/preview', 'post'>;
    // The reading stops when the client goes away.
    const controller = new AbortController();
    res.once('close', () => controller.abort());
    try {
      const preview = await previewCollection({ list: deps.list, rules, maxItems: config.maxCollectionItems }, body, controller.signal);
      sendJson(res, ['/collections/preview', 'post'], 200, preview);
    } catch (error) {
      // The client left: no answer is owed, and its leaving is no fault of the server's.
      if (controller.signal.aborted) return;
      if (error instanceof DownloadError) throw new HttpProblem(422, error.message, {}, undefined, { code: error.code });
      throw error;
    }
  });

  router.get('/collections', async (req, res) => {
    const query = req.query as { status?: CollectionStatus[]; subscription_id?: string; limit?: number; cursor?: string };
    const page = await listCollections(collections, keys.callerOf(req), {
      statuses: query.status,
      subscriptionId: query.subscription_id?.toLowerCase(),
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    sendJson(res, ['/collections', 'get'], 200, { items: page.items, next_cursor: page.nextCursor });
  });

  router.get('/collections/:collection_id', async (req, res) => {
    const id = req.params.collection_id;
    const streaming = wantsEvents(req);
    if (streaming) refuseWhenStreamsFull(deps.streams);
    const collection = await readCollection(collections, id, keys.callerOf(req));
    if (!collection) throw notFound(id);
    if (!streaming) return sendJson(res, ['/collections/{collection_id}', 'get'], 200, collection);
    refuseWhenStreamsFull(deps.streams);
    deps.streams.serve(res, events, { id, lastEventId: req.get('last-event-id'), present: (changed: Collection) => changed }, collection);
  });

  router.delete('/collections/:collection_id', async (req, res) => {
    const id = req.params.collection_id;
    const cancelled = await cancelCollection(deps, id, keys.callerOf(req));
    if (!cancelled) throw notFound(id);
    sendJson(res, ['/collections/{collection_id}', 'delete'], 200, (await readCollection(collections, id, null))!);
  });

  return router;
}

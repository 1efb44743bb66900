import { Router } from 'express';
import { presentCollection } from '../../collections/present.ts';
import type { Config } from '../../config/index.ts';
import { formatArchive } from '../../subscriptions/archive.ts';
import { checkSubscription, type CheckDeps } from '../../subscriptions/check.ts';
import { listSubscriptions, readSubscription } from '../../subscriptions/read.ts';
import { presentSubscription } from '../../subscriptions/present.ts';
import { SubscriptionRequestCheck } from '../../subscriptions/rules.ts';
import type { ApiKeys } from '../auth.ts';
import { HttpProblem } from '../problem.ts';
import { publicBase } from '../public-base.ts';
import { sendJson, type RequestBody } from '../typed.ts';

type SubscriptionRoutesDeps = { check: CheckDeps; config: Config; keys: ApiKeys };

function notFound(id: string): HttpProblem {
  return new HttpProblem(404, `No subscription with id ${id}.`);
}

export function subscriptionRoutes(deps: SubscriptionRoutesDeps): Router {
  const router = Router();
  const { config, keys } = deps;
  const { subscriptions } = deps.check;
  const rules = new SubscriptionRequestCheck({
    allowPrivateAddresses: config.allowPrivateAddresses,
    webhooks: Boolean(config.webhookSecret),
    minIntervalSeconds: config.subscriptionMinIntervalSeconds,
    maxItems: config.maxCollectionItems,
  });

  router.post('/subscriptions', async (req, res) => {
    const body = req.body as RequestBody<'/subscriptions', 'post'>;
    const caller = keys.callerOf(req);
    const { data, seen } = rules.newSubscription(caller, body, publicBase(req, config));
    const limit = caller.sees === 'own' && config.maxSubscriptionsPerKey > 0 ? config.maxSubscriptionsPerKey : undefined;
    const created = await subscriptions.create(data, seen, limit);
    if (created.kind === 'exists') {
      throw new HttpProblem(409, `You already follow ${body.url} (subscription ${created.id}).`, {}, undefined, { subscription_id: created.id });
    }
    if (created.kind === 'over_limit') {
      throw new HttpProblem(429, `This API key already holds ${created.limit} subscriptions (MAX_SUBSCRIPTIONS_PER_KEY); delete one to follow another.`);
    }
    res.location(`${config.basePath}/subscriptions/${created.row.id}`);
    sendJson(res, ['/subscriptions', 'post'], 201, (await readSubscription(subscriptions, created.row.id, null))!);
  });

  router.get('/subscriptions', async (req, res) => {
    const query = req.query as { limit?: number; cursor?: string };
    const page = await listSubscriptions(subscriptions, keys.callerOf(req), { limit: query.limit ?? 20, cursor: query.cursor });
    sendJson(res, ['/subscriptions', 'get'], 200, { items: page.items, next_cursor: page.nextCursor });
  });

  router.get('/subscriptions/:subscription_id', async (req, res) => {
    const id = req.params.subscription_id;
    const subscription = await readSubscription(subscriptions, id, keys.callerOf(req));
    if (!subscription) throw notFound(id);
    sendJson(res, ['/subscriptions/{subscription_id}', 'get'], 200, subscription);
  });

  router.patch('/subscriptions/:subscription_id', async (req, res) => {
    const id = req.params.subscription_id;
    const caller = keys.callerOf(req);
    const row = await subscriptions.findFor(id, caller);
    if (!row) throw notFound(id);
    const updated = await subscriptions.update(id, caller, rules.changes(row, req.body as RequestBody<'/subscriptions/{subscription_id}', 'patch'>));
    if (!updated) throw notFound(id);
    sendJson(res, ['/subscriptions/{subscription_id}', 'patch'], 200, (await readSubscription(subscriptions, id, null))!);
  });

  router.delete('/subscriptions/:subscription_id', async (req, res) => {
    const id = req.params.subscription_id;
    const removed = await subscriptions.remove(id, keys.callerOf(req));
    if (!removed) throw notFound(id);
    const stopped = { ...removed.row, enabled: false, nextCheckAt: null };
    sendJson(res, ['/subscriptions/{subscription_id}', 'delete'], 200, presentSubscription(stopped, removed.seenCount));
  });

  router.post('/subscriptions/:subscription_id/check', async (req, res) => {
    const id = req.params.subscription_id;
    // The reading stops when the client goes away; the subscription is let go for its schedule.
    const controller = new AbortController();
    res.once('close', () => controller.abort());
    let outcome;
    try {
      outcome = await checkSubscription(deps.check, id, { caller: keys.callerOf(req) }, controller.signal);
    } catch (error) {
      if (controller.signal.aborted) return;
      throw error;
    }
    if (outcome.kind === 'gone') throw notFound(id);
    if (outcome.kind === 'busy') throw new HttpProblem(409, `A check of subscription ${id} is already running; its result will show on the subscription.`);
    if (outcome.kind === 'failed') throw new HttpProblem(422, outcome.error.message, {}, undefined, { code: outcome.error.code });
    if (!outcome.collection) return sendJson(res, ['/subscriptions/{subscription_id}/check', 'post'], 200, { new: 0 });
    res.location(`${config.basePath}/collections/${outcome.collection.row.id}`);
    sendJson(res, ['/subscriptions/{subscription_id}/check', 'post'], 202, presentCollection(outcome.collection.row, outcome.collection.counts));
  });

  router.get('/subscriptions/:subscription_id/archive', async (req, res) => {
    const id = req.params.subscription_id;
    if (!(await subscriptions.findFor(id, keys.callerOf(req)))) throw notFound(id);
    res.type('text/plain; charset=utf-8').send(formatArchive(await subscriptions.archive(id)));
  });

  return router;
}

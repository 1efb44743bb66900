import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { components } from '../generated/api.ts';
import { startTestService, type Download, type TestService } from './support/api.ts';
import { childrenOf, createCollection, waitForCollection, type Collection } from './support/collections.ts';
import { startFixtureServer, type FixtureServer } from './support/fixture-server.ts';
import { mediaPath } from './support/media.ts';
import { webhookChecker } from './support/webhook-contract.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from './support/webhook-receiver.ts';

// A collection's callback_url hears each child's download webhook, and one collection.completed
// when the collection ends, however it ends.

type CollectionWebhookEvent = components['schemas']['CollectionWebhookEvent'];
type WebhookEvent = components['schemas']['WebhookEvent'];

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const checkDownloadDelivery = webhookChecker('downloadEnded');
const checkCollectionDelivery = webhookChecker('collectionEnded');
let app: TestService;
let source: FixtureServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  [app, source, receiver] = await Promise.all([startTestService({ webhookSecret: secret }), startFixtureServer(), startWebhookReceiver()]);
});

afterAll(async () => {
  await receiver?.stop();
  await source?.close();
  await app?.stop();
});

function verified(delivery: ReceivedWebhook): unknown {
  const pick = (name: string) => String(delivery.headers[name] ?? '');
  return new Webhook(secret).verify(delivery.body, {
    'webhook-id': pick('webhook-id'),
    'webhook-timestamp': pick('webhook-timestamp'),
    'webhook-signature': pick('webhook-signature'),
  });
}

test("when a collection with a callback_url ends, then the receiver gets each child's webhook and one signed collection.completed holding the final counts", async () => {
  const callback = receiver.hook('/batch');
  const urls = [source.file('/a.mp4', mediaPath('clip.mp4')), source.status('/missing.mp4', 404), source.file('/c.mp4', mediaPath('clip.mp4'))];
  const created = await createCollection(app.http, { urls, callback_url: callback });
  expect(created.status).toBe(202);
  const collection = created.body as Collection;
  expect(collection.options.callback_url).toBe(callback);
  const done = await waitForCollection(app.http, collection.id, ['completed']);
  expect(done.counts).toMatchObject({ total: 3, completed: 2, failed: 1 });

  const deliveries = await receiver.waitForDeliveries('/batch', 4, 30_000);
  const events = deliveries.map((delivery) => verified(delivery) as { type: string });
  const ended = deliveries.filter((_, i) => events[i]!.type === 'collection.completed');
  expect(ended).toHaveLength(1);
  checkCollectionDelivery(ended[0]!);
  const event = verified(ended[0]!) as CollectionWebhookEvent;
  expect(event.data).toMatchObject({ id: collection.id, status: 'completed', counts: { total: 3, completed: 2, failed: 1 } });

  const children = await childrenOf(app.http, collection.id);
  const childEvents = deliveries.filter((_, i) => events[i]!.type !== 'collection.completed');
  childEvents.forEach(checkDownloadDelivery);
  const byChild = new Map(childEvents.map((delivery) => [(verified(delivery) as WebhookEvent).data.id, (verified(delivery) as WebhookEvent).type]));
  expect(byChild).toEqual(new Map(children.map((child: Download) => [child.id, child.status === 'completed' ? 'download.completed' : 'download.failed'])));
  // No more than one each, even after a while.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(receiver.deliveriesTo('/batch')).toHaveLength(4);
});

test('when a collection is cancelled, then its one collection.completed says cancelled, after its cancelled children are counted', async () => {
  const callback = receiver.hook('/cancelled');
  const urls = [1, 2, 3].map((n) => source.file(`/slow-${n}.mp4`, mediaPath('big.mp4'), { bytesPerSecond: 200_000 }));
  const collection = (await createCollection(app.http, { urls, callback_url: callback })).body as Collection;
  const cancelled = await app.http.request('DELETE', `/collections/${collection.id}`, '/collections/{collection_id}');
  expect(cancelled.status).toBe(200);
  const deliveries = await receiver.waitForDeliveries('/cancelled', 4, 30_000);
  const ended = deliveries.map((delivery) => verified(delivery) as CollectionWebhookEvent).filter((event) => event.type === 'collection.completed');
  expect(ended).toHaveLength(1);
  expect(ended[0]!.data).toMatchObject({ status: 'cancelled', counts: { total: 3, cancelled: 3 } });
});

import { useService } from './support/harness.ts';
import { growingFeed } from './support/subscription-clients.ts';
import { waitFor } from './support/waiting.ts';

// Subscriptions asked for by a hostile client, or following a hostile source: each answer is the
// contract's, and nothing a refused request carries is kept.

const { app, source } = useService({ subscriptionMinIntervalSeconds: 1 });

function create(body: unknown) {
  return app.http.request('POST', '/subscriptions', '/subscriptions', { body });
}

function change(id: string, body: unknown) {
  return app.http.request('PATCH', `/subscriptions/${id}`, '/subscriptions/{subscription_id}', { body });
}

test('when title_contains holds control characters such as NUL, then it is kept as a title is, one line without them, and one with nothing else is a 400 that changes nothing', async () => {
  const feed = growingFeed(source, '/hostile/filter.xml', 'Filtered');
  const refused = await create({ url: feed.url, interval_seconds: 3_600, title_contains: '\u0000\u001b\u202e ' });
  expect(refused.status).toBe(400);
  expect(refused.body.errors).toEqual([expect.objectContaining({ field: '/body/title_contains' })]);

  const created = await create({ url: feed.url, interval_seconds: 3_600, title_contains: 'epi\u0000sode\u001b\u2028one' });
  expect(created.status).toBe(201);
  expect(created.body.title_contains).toBe('episode one');
  const id = created.body.id as string;

  const changed = await change(id, { title_contains: '\u202epart\u0000 two' });
  expect(changed.status).toBe(200);
  expect(changed.body.title_contains).toBe('part two');
  const unchanged = await change(id, { title_contains: '\u0000', enabled: false });
  expect(unchanged.status).toBe(400);
  expect(unchanged.body.errors).toEqual([expect.objectContaining({ field: '/body/title_contains' })]);
  const kept = await app.http.request('GET', `/subscriptions/${id}`, '/subscriptions/{subscription_id}');
  expect(kept.body).toMatchObject({ title_contains: 'part two', enabled: true });
});

test('when a subscription is deleted while a check asked for reads a source that then fails, then the check answers 404, as one whose source answered does', async () => {
  let release: () => void = () => undefined;
  const url = source.route('/hostile/held.xml', async (_req, res) => {
    await new Promise<void>((resolve) => (release = resolve));
    res.writeHead(500).end();
  });
  const created = await create({ url, interval_seconds: 3_600 });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  // The first reading, queued at once, is held too: let it fail, then ask for a check.
  await waitFor('the first reading to arrive', () => source.requestsFor('/hostile/held.xml').length === 1);
  release();
  await waitFor('the first reading to end', async () => {
    const now = await app.http.request('GET', `/subscriptions/${id}`, '/subscriptions/{subscription_id}');
    return now.body.last_checked_at !== null;
  });

  const check = app.http.request('POST', `/subscriptions/${id}/check`, '/subscriptions/{subscription_id}/check');
  await waitFor('the check to reach the source', () => source.requestsFor('/hostile/held.xml').length === 2);
  const removed = await app.http.request('DELETE', `/subscriptions/${id}`, '/subscriptions/{subscription_id}');
  expect(removed.status).toBe(200);
  release();
  expect((await check).status).toBe(404);
});

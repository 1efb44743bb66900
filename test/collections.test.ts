import { mediaPath, sha256File } from './support/media.ts';
import { childrenOf, createCollection, getCollection, waitForCollection, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';

// Collections through the public API: a batch of URLs and a single video become ordinary
// downloads, at most COLLECTION_CONCURRENCY of one collection's running at once.

const CONCURRENCY = 2;
const { app, source } = useService({ collectionConcurrency: CONCURRENCY });

describe('a batch', () => {
  test('when a batch of URLs is posted, then each URL becomes a child in the given order, a repeat once, and every child completes', async () => {
    const urls = [1, 2, 3, 2, 4].map((n) => source.file(`/batch/${n}.mp4`, mediaPath('clip.mp4')));
    const created = await createCollection(app.http, { urls, name: 'Four clips' });
    expect(created.status).toBe(202);
    const collection = created.body as Collection;
    expect(created.headers.location).toBe(`/collections/${collection.id}`);
    expect(collection).toMatchObject({ kind: 'batch', name: 'Four clips', url: null, status: 'running' });
    expect(collection.counts.total).toBe(4);

    const done = await waitForCollection(app.http, collection.id, ['completed'], 60_000);
    expect(done.counts).toEqual({ total: 4, queued: 0, downloading: 0, processing: 0, completed: 4, failed: 0, cancelled: 0, expired: 0 });
    expect(done.finished_at).not.toBeNull();

    const children = await childrenOf(app.http, collection.id, 3);
    expect(children.map((child) => child.url)).toEqual([urls[0], urls[1], urls[2], urls[4]]);
    expect(children.map((child) => child.collection)).toEqual([1, 2, 3, 4].map((index) => ({ id: collection.id, index })));
    const expected = await sha256File(mediaPath('clip.mp4'));
    for (const child of children) {
      expect(child.status).toBe('completed');
      expect(child.file?.sha256).toBe(expected);
    }
  });

  test('when a collection runs, then no more of its children than COLLECTION_CONCURRENCY are ever running at once', async () => {
    const urls = [1, 2, 3, 4, 5, 6].map((n) => source.file(`/slow/${n}.mp4`, mediaPath('clip.mp4'), { bytesPerSecond: 400_000 }));
    const collection = (await createCollection(app.http, { urls })).body as Collection;
    let most = 0;
    let seen: Collection = collection;
    while (seen.status === 'running') {
      most = Math.max(most, seen.counts.downloading + seen.counts.processing);
      seen = await getCollection(app.http, collection.id);
    }
    expect(seen.status).toBe('completed');
    expect(seen.counts.completed).toBe(6);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(CONCURRENCY);
    // Every child was fetched, each once.
    for (const url of urls) expect(source.requestsFor(new URL(url).pathname).length).toBeGreaterThan(0);
  });
});

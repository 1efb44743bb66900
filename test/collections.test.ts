import { openCollectionStream } from './support/event-stream.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { childrenOf, createCollection, getCollection, waitForCollection, type Collection } from './support/collections.ts';
import { useService } from './support/harness.ts';
import { waitFor } from './support/waiting.ts';

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

  test('when a batch names one URL in several spellings (the scheme and host in capitals, a dot segment), then it is one child, as first written', async () => {
    const url = source.file('/spelled/clip.mp4', mediaPath('clip.mp4'));
    const { host } = new URL(url);
    const spellings = [url, `HTTP://${host.toUpperCase()}/spelled/clip.mp4`, `http://${host}/spelled/./clip.mp4`];
    const collection = (await createCollection(app.http, { urls: spellings })).body as Collection;
    expect(collection.counts.total).toBe(1);
    const done = await waitForCollection(app.http, collection.id, ['completed']);
    expect(done.counts).toMatchObject({ total: 1, completed: 1 });
    expect((await childrenOf(app.http, collection.id)).map((child) => child.url)).toEqual([url]);
  });

  test('when a collection runs, then no more of its children than COLLECTION_CONCURRENCY are ever fetched or running at once', async () => {
    const urls = [1, 2, 3, 4, 5, 6].map((n) => source.file(`/slow/${n}.mp4`, mediaPath('clip.mp4'), { bytesPerSecond: 100_000 }));
    const collection = (await createCollection(app.http, { urls })).body as Collection;
    let mostRunning = 0;
    let mostFetched = 0;
    let seen: Collection = collection;
    while (seen.status === 'running') {
      mostRunning = Math.max(mostRunning, seen.counts.downloading + seen.counts.processing);
      // Children whose source is being read right now, by the requests the source has not finished.
      const fetching = new Set(
        source.requests.filter((request) => request.path.startsWith('/slow/') && request.outcome === undefined).map((request) => request.path),
      );
      mostFetched = Math.max(mostFetched, fetching.size);
      seen = await getCollection(app.http, collection.id);
    }
    expect(seen.status).toBe('completed');
    expect(seen.counts.completed).toBe(6);
    expect(mostRunning).toBe(CONCURRENCY);
    expect(mostFetched).toBeGreaterThan(0);
    expect(mostFetched).toBeLessThanOrEqual(CONCURRENCY);
  });
});

describe('a URL', () => {
  test('when the URL is a single video, then the collection is a playlist of one child that completes', async () => {
    const url = source.file('/single.mp4', mediaPath('clip.mp4'));
    const created = await createCollection(app.http, { url, mode: 'mute' });
    expect(created.status).toBe(202);
    const collection = created.body as Collection;
    expect(collection).toMatchObject({ kind: 'playlist', url, status: 'expanding', expanded_at: null });
    expect(collection.options).toMatchObject({ mode: 'mute', quality: 'best', limit: 500, entries: null });
    const done = await waitForCollection(app.http, collection.id, ['completed']);
    expect(done.counts).toMatchObject({ total: 1, completed: 1 });
    expect(done.expanded_at).not.toBeNull();
    const [child] = await childrenOf(app.http, collection.id);
    expect(child).toMatchObject({ url, mode: 'mute', status: 'completed', collection: { id: collection.id, index: 1 } });
    expect(child!.file?.audio_codec).toBeNull();
  });
});

describe('events and cancel', () => {
  test('when a collection is followed, then a collection event comes as its counts change, and the stream ends after the completed one', async () => {
    const urls = [1, 2, 3].map((n) => source.file(`/followed/${n}.mp4`, mediaPath('clip.mp4'), { bytesPerSecond: 1_000_000 }));
    const collection = (await createCollection(app.http, { urls })).body as Collection;
    const stream = await openCollectionStream(app.service.url, collection.id);
    expect(stream.status).toBe(200);
    await stream.ended;
    const events = stream.events;
    expect(events.every((event) => event.event === 'collection' && event.collection.id === collection.id)).toBe(true);
    expect(events.map((event) => Number(event.id))).toEqual(events.map((_, i) => i + 1));
    const completedCounts = events.map((event) => event.collection.counts.completed);
    // Counts only go up (changes close together may come as one event), the children's progress
    // was seen on the way, and the last event is the final state.
    expect(completedCounts).toEqual([...completedCounts].sort((a, b) => a - b));
    expect(events.some((event) => event.collection.status === 'running' && event.collection.counts.downloading > 0)).toBe(true);
    expect(events.slice(0, -1).every((event) => event.collection.status === 'running')).toBe(true);
    expect(events.at(-1)!.collection).toMatchObject({ status: 'completed', counts: { completed: 3 } });
  });

  test('when a running collection is deleted, then every child not yet ended is cancelled within seconds with its source connection closed, and completed children keep their files', async () => {
    const fast = source.file('/cancel/fast.mp4', mediaPath('clip.mp4'));
    const slow = [1, 2, 3, 4].map((n) => source.file(`/cancel/slow-${n}.mp4`, mediaPath('big.mp4'), { bytesPerSecond: 200_000 }));
    const collection = (await createCollection(app.http, { urls: [fast, ...slow] })).body as Collection;
    await waitFor('the fast child to complete', async () => (await getCollection(app.http, collection.id)).counts.completed === 1);
    await waitFor(
      'two slow children to be fetched',
      () =>
        new Set(source.requests.filter((request) => request.path.startsWith('/cancel/slow-') && request.bytesSent > 0).map((request) => request.path)).size ===
        2,
    );

    const started = Date.now();
    const deleted = await app.http.request('DELETE', `/collections/${collection.id}`, '/collections/{collection_id}');
    const answered = Date.now();
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ status: 'cancelled', counts: { total: 5, completed: 1, cancelled: 4, queued: 0, downloading: 0 } });
    expect((deleted.body as Collection).finished_at).not.toBeNull();
    await waitFor(
      'every slow source connection to close',
      () => source.requests.filter((request) => request.path.startsWith('/cancel/slow-')).every((request) => request.outcome !== undefined),
      10_000,
    );
    expect(Date.now() - started).toBeLessThan(10_000);

    const children = await childrenOf(app.http, collection.id);
    expect(children.map((child) => child.status)).toEqual(['completed', 'cancelled', 'cancelled', 'cancelled', 'cancelled']);
    const file = await app.http.getFile(children[0]!.download_url!);
    expect(file.status).toBe(200);
    // Nothing revives a cancelled child: none of the held ones was ever fetched after the cancel.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(source.requests.filter((request) => request.path.startsWith('/cancel/slow-') && request.receivedAt > answered)).toEqual([]);

    const again = await app.http.request('DELETE', `/collections/${collection.id}`, '/collections/{collection_id}');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(deleted.body);
  });
});

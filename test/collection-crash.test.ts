import { stat } from 'node:fs/promises';
import { childrenOf, createCollection, getCollection, type Collection } from './support/collections.ts';
import { mediaPath, sha256File } from './support/media.ts';
import { useProcessSetting } from './support/process-setting.ts';
import { waitFor } from './support/waiting.ts';

// A collection outlives the process running it: killed with SIGKILL mid-collection, it completes
// after a restart, its interrupted children resumed rather than fetched again, and however many
// worker processes there are, no more than COLLECTION_CONCURRENCY of its children run at once.

// One connection a file, so that each child's bytes are one request's, or two after a resume.
const setting = useProcessSetting({ COLLECTION_CONCURRENCY: '2', DIRECT_CONNECTIONS: '1' });
const { source } = setting;

/** A killed worker's claim holds until its lease runs out (30 s after its last renewal). */
const TAKEOVER_MS = 90_000;

const startProcess = (env: Record<string, string> = {}) => setting.start(env);

test('when the process is killed with SIGKILL mid-collection and two processes take over, then it completes, each interrupted child resumes from its checkpoint, and never more than two children are fetched at once', async () => {
  const size = (await stat(mediaPath('big.mp4'))).size;
  const paths = [1, 2, 3, 4, 5].map((n) => `/crash/${n}.mp4`);
  const urls = paths.map((path) => source.file(path, mediaPath('big.mp4'), { bytesPerSecond: Math.ceil(size / 3) }));

  const first = await startProcess();
  const created = await createCollection(first.http, { urls });
  expect(created.status).toBe(202);
  const id = (created.body as Collection).id;
  // Two children well under way (past their first checkpoint, a second in), the others waiting for their place.
  await waitFor('two children half fetched', () => source.requests.filter((request) => request.bytesSent > size / 2).length >= 2, 20_000);
  await first.kill('SIGKILL');
  await waitFor('the fixture to see the connections drop', () => source.requests.every((request) => request.outcome !== undefined));
  const interrupted = new Set(source.requests.map((request) => request.path));
  expect(interrupted.size).toBe(2);

  let most = 0;
  const sampling = setInterval(() => {
    most = Math.max(most, new Set(source.requests.filter((request) => request.outcome === undefined).map((request) => request.path)).size);
  }, 20);
  try {
    const api = await startProcess();
    await startProcess({ ROLE: 'worker' });
    const done = await waitFor(
      'the collection to complete',
      async () => {
        const seen = await getCollection(api.http, id);
        return seen.status === 'completed' && seen;
      },
      TAKEOVER_MS,
    );
    expect(done.counts).toMatchObject({ total: 5, completed: 5, failed: 0, queued: 0 });

    const expected = await sha256File(mediaPath('big.mp4'));
    const children = await childrenOf(api.http, id);
    expect(children.map((child) => [child.collection?.index, child.status, child.file?.sha256])).toEqual(
      [1, 2, 3, 4, 5].map((index) => [index, 'completed', expected]),
    );
    for (const path of paths) {
      const requests = source.requestsFor(path);
      const sent = requests.reduce((sum, request) => sum + request.bytesSent, 0);
      if (interrupted.has(path)) {
        // Resumed from where the record stood, which trails the disk by at most a second of bytes.
        expect(requests).toHaveLength(2);
        expect(requests[1]!.range).toMatch(/^bytes=[1-9]\d*-$/);
        expect(sent - size).toBeLessThanOrEqual(Math.ceil(size / 3) + 65_536);
      } else {
        expect(requests.map((request) => [request.range, request.bytesSent])).toEqual([[undefined, size]]);
      }
    }
  } finally {
    clearInterval(sampling);
  }
  expect(most).toBeGreaterThan(0);
  expect(most).toBeLessThanOrEqual(2);
}, 150_000);

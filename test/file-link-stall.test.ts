import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { projectRoot } from '../src/config/paths.ts';
import { DATABASE_ANSWER_MS } from '../src/db/deadline.ts';
import { whileLocked } from './support/database.ts';
import { bodyJson, type Download } from './support/api.ts';
import { useService } from './support/harness.ts';
import { mediaPath } from './support/media.ts';
import { within } from './support/waiting.ts';

// The file link while the database stalls: it neither fails nor answers, as under a lock held too
// long or a network that drops its packets. A lock on the downloads table, held by a transaction
// of this file's own, stalls every query of the service that reads a download, as such a database
// would; the transaction is always rolled back, so the lock never outlives its test.

const { app, source } = useService();
let original: Buffer;
/** Fetched once before the stall, so that the service has its lookup. */
let warm: Download;
/** Never fetched before the stall. */
let cold: Download;

beforeAll(async () => {
  original = await readFile(mediaPath('clip.mp4'));
  const completed = async (route: string) => {
    const created = await app.http.createDownload({ url: source.file(route, mediaPath('clip.mp4')) });
    return app.waitForStatus(created.body.id as string, ['completed']);
  };
  [warm, cold] = await Promise.all([completed('/warm.mp4'), completed('/cold.mp4')]);
});

/** Runs `during` while the downloads table is locked against every read. */
const whileStalled = <T>(during: () => Promise<T>): Promise<T> => whileLocked(app.config.databaseUrl, ['downloads'], during);

/** The request's answer and how long it took; a failure that says so when it has not come within `ms`. */
async function timed<T>(ms: number, what: string, request: () => Promise<T>): Promise<{ res: T; elapsed: number }> {
  const started = Date.now();
  const res = await within(ms, what, request());
  return { res, elapsed: Date.now() - started };
}

/** Long enough for the bound on a loaded machine, far shorter than for ever. */
const ANSWER_MS = DATABASE_ANSWER_MS + 4_000;

test('when the database stalls, then a file link not fetched recently answers 503 with Retry-After within seconds, to GET and HEAD, in the plain form and the one Express routes', async () => {
  await whileStalled(async () => {
    // Together, so that the bound is waited out once; each is a lookup of its own all the same.
    const base = new URL(cold.download_url!).origin;
    const [get, head, routed] = await Promise.all([
      timed(ANSWER_MS, 'GET of a cold link while the database stalls', () => app.http.getFile(cold.token!)),
      timed(ANSWER_MS, 'HEAD of a cold link while the database stalls', () => app.http.headFile(cold.token!)),
      // Percent-encoded, so that the shortcut leaves it to Express and its problem handler.
      timed(ANSWER_MS, 'GET of a cold link through Express while the database stalls', () => fetch(`${base}/download/${cold.token!.replace('.', '%2E')}`)),
    ]);
    for (const { res, elapsed } of [get, head]) {
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      // The service waited for the database as long as it allows, and no longer.
      expect(elapsed).toBeGreaterThanOrEqual(DATABASE_ANSWER_MS - 100);
    }
    expect(bodyJson<{ status: number; detail: string }>(get.res)).toMatchObject({ status: 503, detail: expect.stringMatching(/database/) });
    expect(routed.res.status).toBe(503);
    expect(Number(routed.res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(routed.res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
  // The lookup is made again once the database answers: the 503 was kept nowhere.
  const later = await within(ANSWER_MS, 'GET of the cold link once the database answers', app.http.getFile(cold.token!));
  expect(later.status).toBe(200);
  expect(later.body.equals(original)).toBe(true);
}, 30_000);

test('when the database stalls, then a link fetched just before still gets its file', async () => {
  const before = await app.http.headFile(warm.token!);
  expect(before.status).toBe(200);
  await whileStalled(async () => {
    const { res: get, elapsed } = await timed(ANSWER_MS, 'GET of a warm link while the database stalls', () => app.http.getFile(warm.token!));
    expect(get.status).toBe(200);
    expect(get.body.equals(original)).toBe(true);
    // Not after waiting out the database: without it.
    expect(elapsed).toBeLessThan(DATABASE_ANSWER_MS);
    const ranged = await within(ANSWER_MS, 'a range of a warm link while the database stalls', app.http.getFile(warm.token!, { Range: 'bytes=100-1099' }));
    expect(ranged.status).toBe(206);
    expect(ranged.body.equals(original.subarray(100, 1100))).toBe(true);
    const head = await within(ANSWER_MS, 'HEAD of a warm link while the database stalls', app.http.headFile(warm.token!));
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(original.length));
  });
}, 30_000);

test('when the contract says how long the file link waits for the database, then it is the bound the service keeps', async () => {
  type Responses = { components: { responses: Record<string, { description: string }> } };
  const spec = parse(await readFile(path.join(projectRoot, 'openapi.yaml'), 'utf8')) as Responses;
  expect(spec.components.responses.FileLinkUnavailable!.description.replace(/\s+/g, ' ')).toContain(`within ${DATABASE_ANSWER_MS / 1000} seconds`);
});

test('when the database stalls for longer than a cancel may take, then DELETE answers 503 with Retry-After once it is back, and the download is as it was', async () => {
  const created = await app.http.createDownload({ url: source.file('/to-cancel.mp4', mediaPath('clip.mp4')) });
  const id = created.body.id as string;
  await app.waitForStatus(id, ['completed']);
  // Prisma gives a transaction 5 s: the lock is held past them, and then let go. (Requests other
  // than the file link wait for a stalled database as long as it stalls.)
  const { asked } = await whileStalled(async () => {
    // In an object, so that the stall ends without waiting for the answer.
    const asked = app.http.request('DELETE', `/downloads/${id}`, '/downloads/{download_uuid}');
    await sleep(6_500);
    return { asked };
  });
  const res = await within(20_000, 'DELETE after the stall', asked);
  expect(res.status).toBe(503);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(((await app.http.getDownload(id)).body as Download).status).toBe('completed');
}, 60_000);

import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Download, TestService } from './api.ts';
import { watchResponsiveness } from './responsiveness.ts';
import { waitFor } from './waiting.ts';

// What every test of a hostile source checks: the download ends, the API answered quickly all the
// while, and a download that failed left nothing on disk.

/** Where a download's work and its file live. */
export function placesOf(app: TestService, id: string): [partial: string, file: string] {
  return [path.join(app.config.dataDir, 'partial', id), path.join(app.config.dataDir, 'files', id)];
}

/** A failed download keeps nothing: no partial work and no file (removed just after the status changes). */
export async function expectNothingStored(app: TestService, id: string): Promise<void> {
  const leftovers = () => placesOf(app, id).filter((place) => existsSync(place));
  await waitFor(`the files of ${id} to be removed`, () => leftovers().length === 0, 2_000).catch(() => {});
  expect(leftovers()).toEqual([]);
}

/** Creates a download of `body` and waits for it to complete or fail. */
export async function downloadToEnd(app: TestService, body: Record<string, unknown>): Promise<Download> {
  const created = await app.http.createDownload(body);
  expect(created.status).toBe(202);
  return app.waitForStatus((created.body as Download).id, ['completed', 'failed'], 60_000);
}

export type ResponsivenessLimits = { slowestProbeMs: number; worstLoopStallMs?: number };

/** `downloadToEnd` while the API is probed: every probe must be answered within the limits. */
export async function downloadWhileProbing(
  app: TestService,
  body: Record<string, unknown>,
  limits: ResponsivenessLimits = { slowestProbeMs: 500, worstLoopStallMs: 200 },
): Promise<Download> {
  const probe = watchResponsiveness(app.service.url);
  try {
    return await downloadToEnd(app, body);
  } finally {
    const { slowestMs, probes, worstLoopStallMs } = await probe.stop();
    expect(probes).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThan(limits.slowestProbeMs);
    if (limits.worstLoopStallMs !== undefined) expect(worstLoopStallMs).toBeLessThan(limits.worstLoopStallMs);
  }
}

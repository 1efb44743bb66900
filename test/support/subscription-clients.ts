import type { Subscription, VideoDownloadClient } from '../../src/client/index.ts';
import type { FixtureServer } from './fixture-server.ts';
import { mediaPath } from './media.ts';
import { waitFor } from './waiting.ts';

// What the tests of the subscription clients (SDK, CLI, page) share: a feed that grows as a test publishes to it,
// and the wait for a subscription's checks, which run as queue jobs.

/**
 * An RSS feed served by the fixture server: each item's enclosure is a real clip served beside it,
 * the newest item first, as feeds list them.
 */
export type GrowingFeed = {
  url: string;
  /** Publishes items named `names` (their guid and file name), newest last; answers their guids. */
  publish(...names: string[]): string[];
  /** The feed answers `status` from now on, until the next publish. */
  fail(status: number): void;
};

export function growingFeed(source: FixtureServer, route: string, title: string): GrowingFeed {
  const items: string[] = [];
  const serve = () =>
    source.content(route, `<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>${title}</title>${items.join('')}</channel></rss>`, {
      headers: { 'Content-Type': 'application/rss+xml; charset=utf-8' },
    });
  const url = serve();
  return {
    url,
    publish(...names) {
      for (const name of names) {
        const file = source.file(`${route}-media/${name}.mp4`, mediaPath('clip.mp4'));
        items.unshift(`<item><title>Episode ${name}</title><guid>${name}</guid><enclosure url="${file}" type="video/mp4" length="1"/></item>`);
      }
      serve();
      return names;
    },
    fail(status) {
      source.status(route, status);
    },
  };
}

/** Polls the subscription until `done` holds of it (its first reading ended: `last_checked_at`, by default). */
export function waitForSubscription(
  vds: VideoDownloadClient,
  id: string,
  done: (subscription: Subscription) => boolean = (subscription) => subscription.last_checked_at !== null,
  timeoutMs = 20_000,
): Promise<Subscription> {
  return waitFor(
    `subscription ${id} to be checked`,
    async () => {
      const now = await vds.subscriptions.get(id);
      return done(now) && now;
    },
    timeoutMs,
  );
}

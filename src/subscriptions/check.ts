import { createHash, randomUUID } from 'node:crypto';
import { childrenOf } from '../collections/children.ts';
import { refusal, type Lister } from '../collections/expand.ts';
import type { Counted } from '../collections/repository.ts';
import { DownloadError } from '../core/errors.ts';
import type { Caller } from '../downloads/caller.ts';
import { AddressPolicy } from '../net/address-policy.ts';
import type { Listing } from '../sources/listing/index.ts';
import { planEntries } from './entries.ts';
import type { CheckRecord, SubscriptionRepository, SubscriptionRow } from './repository.ts';

export type CheckDeps = {
  subscriptions: SubscriptionRepository;
  list: Lister;
  allowPrivateAddresses: ConstructorParameters<typeof AddressPolicy>[0];
  /** The newest entries a check lists (SUBSCRIPTION_SCAN_ENTRIES). */
  scanEntries: number;
};

/**
 * How long a check holds its subscription past its claim or last renewal; a running check renews
 * it every third of that. Renewed, the hold need not outlast the longest listing (minutes): a
 * check whose process died lets go within seconds, when the retry of its job can take over.
 */
export const CHECK_LEASE_SECONDS = 15;

/**
 * The longest a check's own reading of its source may take (a collection's may take 2 minutes): it
 * wants only the newest entries, and a slow source must not hold one of the few places checks run
 * in for long, or one owner's slow sources would hold up everyone's checks.
 */
const CHECK_READ_TIMEOUT_MS = 30_000;

export type CheckOutcome =
  { kind: 'gone' } | { kind: 'busy' } | { kind: 'failed'; error: DownloadError } | { kind: 'checked'; row: SubscriptionRow; collection: Counted | null };

/**
 * One check of a subscription: scheduled (`due`, the time its job was queued for; a job no
 * longer due does nothing) or asked for by a caller. Lists the newest entries, records them as
 * seen, and makes a collection of those new and wanted. A source that fails is recorded on the
 * subscription and answered as `failed`; a cut short check (the signal) lets the subscription go
 * and throws.
 */
export async function checkSubscription(deps: CheckDeps, id: string, how: { due: Date } | { caller: Caller }, signal: AbortSignal): Promise<CheckOutcome> {
  const claim = await deps.subscriptions.claim(id, how, CHECK_LEASE_SECONDS);
  if (claim.kind !== 'claimed') return claim;
  const subscription = claim.row;
  const firstReading = subscription.primedAt === null;
  const holding = keepHeld(deps.subscriptions, id, subscription.checkingUntil!);
  let listing: Listing;
  try {
    const limit = firstReading ? Math.max(deps.scanEntries, subscription.backfill) : deps.scanEntries;
    // A feed with nothing in it yet is read as such: its first items are new, not a failure that
    // leaves the subscription unprimed until they are there (then seen, and never downloaded).
    listing = await deps.list(subscription.url, { limit, signal, feedMayBeEmpty: true, readTimeoutMs: CHECK_READ_TIMEOUT_MS });
  } catch (error) {
    if (signal.aborted) {
      await deps.subscriptions.release(id);
      throw error;
    }
    const failure = error instanceof DownloadError ? error : new DownloadError('internal_error', 'Reading the subscription failed unexpectedly.', true);
    // Deleted while it read: gone, as a check that listed its source answers then.
    if (!(await deps.subscriptions.recordFailure(id, failure))) return { kind: 'gone' };
    return { kind: 'failed', error: failure };
  } finally {
    holding.stop();
  }
  const recorded = await deps.subscriptions.recordCheck(id, record(deps, subscription, listing, firstReading));
  return recorded ? { kind: 'checked', ...recorded } : { kind: 'gone' };
}

/** Renews the hold `claimed` set until stopped, or until it is found lost (taken over after it ran out). */
function keepHeld(subscriptions: SubscriptionRepository, id: string, claimed: Date): { stop(): void } {
  let held: Date | null = claimed;
  let renewing = false;
  const timer = setInterval(
    () => {
      if (!held || renewing) return;
      renewing = true;
      // A renewal that fails (the database away a moment) keeps the hold it had, for the next try.
      subscriptions
        .renew(id, held, CHECK_LEASE_SECONDS)
        .then(
          (next) => (held = next),
          () => undefined,
        )
        .finally(() => (renewing = false));
    },
    (CHECK_LEASE_SECONDS * 1000) / 3,
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

function record(deps: CheckDeps, subscription: SubscriptionRow, listing: Listing, firstReading: boolean): CheckRecord {
  const planned = planEntries(listing, { titleContains: subscription.titleContains, firstReading, backfill: subscription.backfill });
  const addresses = new AddressPolicy(deps.allowPrivateAddresses);
  const collection = {
    id: randomUUID(),
    owner: subscription.owner,
    kind: 'subscription',
    subscriptionId: subscription.id,
    name: subscription.name,
    url: subscription.url,
    quality: subscription.quality,
    mode: subscription.mode,
    audioFormat: subscription.audioFormat,
    subtitles: subscription.subtitles,
    clipStartSeconds: subscription.clipStartSeconds,
    clipEndSeconds: subscription.clipEndSeconds,
    callbackUrl: subscription.callbackUrl,
    entryPicks: [],
    linkBase: subscription.linkBase,
    idempotencyKey: null,
    // Made by the server, never replayed: the hash only has to be one.
    requestHash: createHash('sha256').update(`subscription ${subscription.id} ${Date.now()}`).digest('hex'),
  };
  const wanted = planned.filter((one) => one.wanted);
  const children = childrenOf(
    collection,
    wanted.map((one, i) => ({ index: i + 1, url: one.entry.url, refused: refusal(addresses, one.entry.url) })),
  );
  return {
    title: listing.title,
    extractor: listing.extractor,
    seen: planned.map((one) => one.seen),
    children: new Map(wanted.map((one, i) => [one.seen.key, children[i]!])),
    collection,
  };
}

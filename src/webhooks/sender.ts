import type { IncomingMessage } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { DownloadError } from '../core/errors.ts';
import { AddressPolicy, BLOCKED_ADDRESS, type PrivateAllowance } from '../net/address-policy.ts';
import { Exchanges } from '../net/timed-request.ts';
import type { WebhookJob } from './queue.ts';

// A receiver is as untrusted as a source: it is reached only on addresses the policy allows, it
// gets 10 seconds in all, its redirects are not followed (each hop would need the policy again,
// and a signed body should reach the URL the client named or nowhere), and of its answer only a
// few KB are read, so that a receiver can neither hold a worker nor fill its memory.

const TIMEOUT_MS = 10_000;
/** Enough to keep the connection reusable after a short answer; a longer one is cut. */
const ANSWER_LIMIT_BYTES = 4096;

/** `final`: trying again cannot help (the address is refused), so no retry is spent on it. */
export type Delivery = { ok: true } | { ok: false; error: string; final: boolean };

export const BLOCKED_SENTENCE = 'The callback address is private or loopback, which this server does not send webhooks to.';

export class WebhookSender {
  private readonly exchanges = new Exchanges();
  private readonly addresses: AddressPolicy;
  private readonly signer: Webhook | undefined;

  /** Without `secret` nothing can be signed, and every delivery fails for good. */
  constructor(options: { secret: string | undefined; allowPrivateAddresses: PrivateAllowance }) {
    this.addresses = new AddressPolicy(options.allowPrivateAddresses);
    this.signer = options.secret ? new Webhook(options.secret) : undefined;
  }

  async deliver(job: WebhookJob): Promise<Delivery> {
    if (!this.signer) {
      return { ok: false, error: 'This server has no WEBHOOK_SECRET to sign the webhook with.', final: true };
    }
    const target = URL.canParse(job.url) ? new URL(job.url) : null;
    if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
      return { ok: false, error: 'The callback URL is not an http: or https: URL.', final: true };
    }
    // The settings may have changed since the create checked it, and a literal is never looked up.
    if (this.addresses.refusesOnItsFace(target)) return { ok: false, error: BLOCKED_SENTENCE, final: true };

    // Signed for this attempt: the timestamp is when it is sent, which receivers hold to a window.
    const sentAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const signal = AbortSignal.timeout(TIMEOUT_MS);
    try {
      const response = await this.exchanges.request(target, {
        method: 'POST',
        body: job.body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'video-download-service webhooks',
          'webhook-id': job.webhook_id,
          'webhook-timestamp': String(sentAt.getTime() / 1000),
          'webhook-signature': this.signer.sign(job.webhook_id, sentAt, job.body),
        },
        signal,
        lookup: this.addresses.allowsEverything ? undefined : this.addresses.lookup,
        connectTimeoutMs: TIMEOUT_MS,
        idleTimeoutMs: TIMEOUT_MS,
      });
      // The status is the whole answer; what follows it only matters to the connection's reuse.
      await readAtMost(response, ANSWER_LIMIT_BYTES);
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) return { ok: true };
      const redirect = status >= 300 && status < 400 ? ', a redirect, which webhooks do not follow' : '';
      return { ok: false, error: `The receiver answered ${status}${redirect}.`, final: false };
    } catch (error) {
      return failure(error, signal);
    }
  }

  close(): Promise<void> {
    this.exchanges.close();
    return Promise.resolve();
  }
}

/** One sentence for how the connection or the wait failed, as the download's `callback.last_error` shows it. */
function failure(error: unknown, signal: AbortSignal): Delivery {
  const withCause = error as { code?: string; cause?: { code?: string } };
  const code = withCause.code ?? withCause.cause?.code ?? '';
  if (code === BLOCKED_ADDRESS || withCause.cause?.code === BLOCKED_ADDRESS) return { ok: false, error: BLOCKED_SENTENCE, final: true };
  const timedOut = signal.aborted || (error instanceof DownloadError && error.code === 'source_timeout');
  if (timedOut) return { ok: false, error: `The receiver did not answer within ${TIMEOUT_MS / 1000} seconds.`, final: false };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { ok: false, error: 'The callback host name could not be resolved.', final: false };
  if (/CERT|SSL|TLS/.test(code)) return { ok: false, error: `TLS with the receiver failed (${code}).`, final: false };
  return { ok: false, error: `The connection to the receiver failed (${code || 'closed'}).`, final: false };
}

/** Reads up to `limit` bytes of an answer and lets go of the rest (and of the connection, if there is more). */
async function readAtMost(response: IncomingMessage, limit: number): Promise<void> {
  response.on('error', () => {});
  let read = 0;
  try {
    for await (const chunk of response) {
      read += (chunk as Buffer).length;
      if (read > limit) break;
    }
  } catch {
    // An answer cut short changes nothing: its status was already there.
  }
}

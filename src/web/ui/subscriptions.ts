import { MAX_INTERVAL_SECONDS, parseDuration, ProblemError, type CreateSubscription, type Subscription, type VideoDownloadClient } from '../../client/index.ts';
import { sentenceOf } from './download-card.ts';
import { SubscriptionCard, type SubscriptionEvents } from './subscription-card.ts';

// The page's subscriptions: a small form that follows a URL at an interval, and the caller's
// subscriptions, each a card. The list is asked for again every REFRESH_MS: checks happen on the
// server's schedule, and the times each card tells ("next in 5m") move on.

const REFRESH_MS = 15_000;
/** Subscriptions shown: one page, the most the service gives (a key holds 50 unless changed). */
const SHOWN = 100;

export type SubscriptionElements = {
  form: HTMLFormElement;
  url: HTMLInputElement;
  every: HTMLInputElement;
  mode: HTMLSelectElement;
  submit: HTMLButtonElement;
  error: HTMLParagraphElement;
  note: HTMLParagraphElement;
  list: HTMLUListElement;
};

export class Subscriptions {
  private readonly cards = new Map<string, SubscriptionCard>();
  private loading = false;
  /** Asked for while a load ran (a key typed meanwhile): one more load follows it. */
  private again = false;

  constructor(
    private readonly elements: SubscriptionElements,
    private readonly client: () => VideoDownloadClient,
    private readonly events: Omit<SubscriptionEvents, 'removed'> & { keyProblem: (error: unknown) => string | null },
  ) {
    elements.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.subscribe();
    });
    setInterval(() => void this.load(), REFRESH_MS);
  }

  /** The caller's subscriptions as the service has them now, newest first. */
  async load(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    const { list, note } = this.elements;
    try {
      const page = await this.client().subscriptions.list({ limit: SHOWN });
      const ids = new Set(page.items.map((subscription) => subscription.id));
      for (const [id, card] of this.cards) if (!ids.has(id)) this.drop(card);
      // In the service's order: each card where it belongs, updated or new. Cards already in that
      // order stay put, since moving one would take the focus from a button in it.
      const nodes = page.items.map((subscription) => this.cardOf(subscription).node);
      if (nodes.some((node, index) => list.children[index] !== node)) list.append(...nodes);
      note.textContent = this.cards.size ? '' : 'No subscriptions yet.';
    } catch (error) {
      const aboutKey = this.events.keyProblem(error);
      // What the list showed belongs to a key that no longer works.
      if (aboutKey) for (const card of [...this.cards.values()]) this.drop(card);
      note.textContent = aboutKey ?? sentenceOf(error);
    } finally {
      this.loading = false;
    }
    if (this.again) {
      this.again = false;
      void this.load();
    }
  }

  private cardOf(subscription: Subscription): SubscriptionCard {
    const card = this.cards.get(subscription.id);
    if (card) {
      card.update(subscription);
      return card;
    }
    const made = new SubscriptionCard(subscription, this.client, { ...this.events, removed: (gone) => this.drop(gone) });
    this.cards.set(subscription.id, made);
    return made;
  }

  private drop(card: SubscriptionCard): void {
    this.cards.delete(card.subscription.id);
    card.node.remove();
    if (!this.cards.size) this.elements.note.textContent = 'No subscriptions yet.';
  }

  private showError(sentence: string, focus: HTMLElement): void {
    this.elements.error.textContent = sentence;
    this.elements.error.hidden = false;
    focus.focus();
  }

  private async subscribe(): Promise<void> {
    const { url, every, mode, submit, error, list, note } = this.elements;
    error.hidden = true;
    if (!url.value.trim()) return this.showError('Paste the link of a channel, a playlist or a feed first.', url);
    const seconds = parseDuration(every.value);
    if (seconds === undefined || seconds > MAX_INTERVAL_SECONDS) {
      return this.showError('Check every: write a time such as 15m, 1h or 1d (at most 30d).', every);
    }
    submit.disabled = true;
    const body: CreateSubscription = {
      url: url.value.trim(),
      interval_seconds: seconds,
      ...(mode.value === 'video' ? {} : { mode: mode.value as CreateSubscription['mode'] }),
    };
    try {
      const created = await this.client().subscriptions.create(body);
      url.value = '';
      note.textContent = '';
      list.prepend(this.cardOf(created).node);
      this.events.announce(`Subscribed to ${created.name ?? created.url}.`);
    } catch (failure) {
      const existing = failure instanceof ProblemError && failure.status === 409 ? failure.problem.subscription_id : undefined;
      if (existing) {
        // The one already there is shown as it is (it may be missing from an old list).
        void this.load();
        return this.showError(`You already follow this link: subscription ${existing}, in the list below.`, url);
      }
      this.showError(this.events.keyProblem(failure) ?? sentenceOf(failure), url);
    } finally {
      submit.disabled = false;
    }
  }
}

import { formatInterval, formatRelative, type Collection, type Subscription, type VideoDownloadClient } from '../../client/index.ts';
import { element, sentenceOf, type Announce } from './download-card.ts';

// One subscription in the list: its name or URL, its state (a failing one with why), when it was
// last checked and is next, how many entries it has seen; "Check now", which says "Nothing new"
// or links to the collection of what was, and "Unsubscribe".

const STATES: Record<Subscription['status'], string> = {
  active: 'Active',
  paused: 'Paused',
  failing: 'Failing',
};

/** When the next check is: `next in 55m`, or due (its job waits for a worker). */
const nextCheck = (at: string, now: number) => (Date.parse(at) - now < 5_000 ? 'next due now' : `next ${formatRelative(at, now)}`);

export type SubscriptionEvents = {
  announce: Announce;
  /** A check found something: the collection of it, to show with the others. */
  found: (collection: Collection) => void;
  /** It was unsubscribed: its card goes. */
  removed: (card: SubscriptionCard) => void;
};

export class SubscriptionCard {
  readonly node = element('li', 'subscription');
  private readonly title = element('div', 'title');
  private readonly source = element('div', 'source');
  private readonly state = element('div', 'state');
  private readonly checks = element('div', 'checks');
  private readonly checkButton = element('button', 'secondary', 'Check now');
  private readonly removeButton = element('button', 'secondary', 'Unsubscribe');
  private readonly outcome = element('p', 'outcome');
  private readonly problem = element('p', 'error');
  private note = '';

  constructor(
    private current: Subscription,
    private readonly client: () => VideoDownloadClient,
    private readonly events: SubscriptionEvents,
  ) {
    this.node.dataset.id = current.id;
    this.checkButton.type = 'button';
    this.removeButton.type = 'button';
    this.checkButton.addEventListener('click', () => void this.check());
    this.removeButton.addEventListener('click', () => void this.remove());
    this.outcome.setAttribute('role', 'status');
    this.outcome.hidden = true;
    const actions = element('div', 'actions');
    actions.append(this.checkButton, this.removeButton);
    this.node.append(this.title, this.source, this.state, this.checks, actions, this.outcome, this.problem);
    this.render();
  }

  get subscription(): Subscription {
    return this.current;
  }

  /** The subscription as the service has it now; drawn again, so its times are told from now. */
  update(subscription: Subscription): void {
    this.current = subscription;
    this.note = '';
    this.render();
  }

  private async check(): Promise<void> {
    this.checkButton.disabled = true;
    this.checkButton.textContent = 'Checking…';
    this.outcome.hidden = true;
    try {
      const result = await this.client().subscriptions.check(this.current.id);
      if (result.found) {
        this.events.found(result.collection);
        this.showFound(result.collection);
      } else {
        this.outcome.textContent = 'Nothing new.';
      }
      this.outcome.hidden = false;
      this.events.announce(`${this.title.textContent}: ${this.outcome.textContent}`);
      this.update(await this.client().subscriptions.get(this.current.id));
    } catch (error) {
      this.note = sentenceOf(error);
      // A check that failed is recorded (status failing, last_error): the card shows it as it is now.
      this.current = await this.client()
        .subscriptions.get(this.current.id)
        .catch(() => this.current);
      this.render();
    } finally {
      this.checkButton.disabled = false;
      this.checkButton.textContent = 'Check now';
    }
  }

  /** `3 new: Show them`, the link going to the collection's card on this page. */
  private showFound(collection: Collection): void {
    const link = element('a', 'found', 'Show them');
    link.href = `#collection-${collection.id}`;
    link.setAttribute('aria-label', `Show the new entries of ${this.title.textContent}`);
    const count = collection.counts.total;
    this.outcome.replaceChildren(`${count} new${count === 1 ? ' entry' : ' entries'}: `, link);
  }

  private async remove(): Promise<void> {
    this.removeButton.disabled = true;
    try {
      await this.client().subscriptions.remove(this.current.id);
      this.events.announce(`Unsubscribed from ${this.title.textContent}.`);
      this.events.removed(this);
    } catch (error) {
      this.removeButton.disabled = false;
      this.note = sentenceOf(error);
      this.render();
    }
  }

  private render(): void {
    const { status, name, url, interval_seconds, seen_count, last_checked_at, next_check_at, last_error } = this.current;
    const now = Date.now();
    this.node.dataset.status = status;
    this.title.textContent = name ?? url;
    this.source.textContent = name ? url : '';
    this.source.hidden = !this.source.textContent;
    this.state.textContent = [STATES[status], `every ${formatInterval(interval_seconds)}`, `${seen_count} seen`].join(' · ');
    this.checks.textContent = [
      last_checked_at ? `Checked ${formatRelative(last_checked_at, now)}` : 'Not checked yet',
      next_check_at ? nextCheck(next_check_at, now) : status === 'paused' ? 'no check until resumed' : null,
    ]
      .filter(Boolean)
      .join(' · ');
    this.checkButton.setAttribute('aria-label', `Check ${this.title.textContent} now`);
    this.removeButton.setAttribute('aria-label', `Unsubscribe from ${this.title.textContent}`);
    // Text from the server is set as text: a source's name or error is never read as HTML.
    this.problem.textContent = this.note || (status === 'failing' && last_error ? `${last_error.message} (${last_error.code})` : '');
    this.problem.hidden = !this.problem.textContent;
  }
}

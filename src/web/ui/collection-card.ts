import { isCollectionFinal, isFinal, type Collection, type VideoDownloadClient } from '../../client/index.ts';
import { DownloadCard, element, sentenceOf, type Announce } from './download-card.ts';

// One collection in the list (a playlist, a feed, a page of several videos, or a batch of links):
// its name, how many entries are ready, failed or to go, a button that cancels the rest, and each
// entry as a download card of its own, with its state and save link.
//
// It asks the service every POLL_MS rather than holding an event stream: the page keeps its few
// streams for single downloads (live.ts), and one collection's entries change one by one anyway.
// Each round is two requests, the collection and its children (one page up to 100 entries each).

const POLL_MS = 1_500;

const STATES: Record<Collection['status'], string> = {
  expanding: 'Finding the entries',
  running: 'Downloading',
  completed: 'Done',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

export class CollectionCard {
  readonly node = element('li', 'collection');
  private readonly title = element('div', 'title');
  private readonly source = element('div', 'source');
  private readonly state = element('div', 'state');
  private readonly cancelButton = element('button', 'secondary', 'Cancel the rest');
  private readonly problem = element('p', 'error');
  private readonly entries = element('ul', 'entries');
  private readonly cards = new Map<string, DownloadCard>();
  private note = '';
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private current: Collection,
    private readonly client: () => VideoDownloadClient,
    private readonly announce: Announce,
  ) {
    this.node.dataset.id = current.id;
    // What a subscription's "Check now" links to.
    this.node.id = `collection-${current.id}`;
    this.cancelButton.type = 'button';
    this.cancelButton.addEventListener('click', () => void this.cancel());
    const actions = element('div', 'actions');
    actions.append(this.cancelButton);
    this.entries.setAttribute('aria-label', 'Entries');
    this.node.append(this.title, this.source, this.state, actions, this.problem, this.entries);
    this.render();
    void this.poll();
  }

  get collection(): Collection {
    return this.current;
  }

  /** Stops asking (the list is drawn again). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The collection and its entries as the service has them now; again later until both are final. */
  private async poll(): Promise<void> {
    this.timer = undefined;
    try {
      this.update(await this.client().collections.get(this.current.id));
      const children = await this.client().collections.children(this.current.id);
      for (const child of children) {
        const card = this.cards.get(child.id);
        if (card) card.update(child);
        else this.addEntry(child);
      }
      if (isCollectionFinal(this.current) && children.every(isFinal)) return;
    } catch (error) {
      this.notice(`${sentenceOf(error)} Trying again.`);
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), POLL_MS);
  }

  private addEntry(child: DownloadCard['download']): void {
    const card = new DownloadCard(child, this.client, this.announce);
    this.cards.set(child.id, card);
    // In the collection's order, whatever order they were found in.
    const index = child.collection?.index ?? 0;
    const after = [...this.entries.children].find((node) => Number((node as HTMLElement).dataset.index) > index);
    card.node.dataset.index = String(index);
    this.entries.insertBefore(card.node, after ?? null);
  }

  private update(collection: Collection): void {
    const changed = collection.status !== this.current.status;
    this.current = collection;
    this.note = '';
    this.render();
    if (changed) this.announce(`${this.title.textContent}: ${this.state.textContent}`);
  }

  private notice(sentence: string): void {
    this.note = sentence;
    this.render();
  }

  private async cancel(): Promise<void> {
    this.cancelButton.disabled = true;
    try {
      this.update(await this.client().collections.cancel(this.current.id));
      if (!this.timer) return;
      // The entries it cancelled show so at once.
      clearTimeout(this.timer);
      await this.poll();
    } catch (error) {
      this.cancelButton.disabled = false;
      this.notice(sentenceOf(error));
    }
  }

  private render(): void {
    const { status, counts, name, url, kind, error } = this.current;
    this.node.dataset.status = status;
    this.title.textContent = name ?? url ?? `${counts.total} links`;
    this.source.textContent = [
      kind === 'batch' ? 'A batch of links' : this.title.textContent === url ? null : url,
      this.current.truncated ? 'more entries were left out' : null,
    ]
      .filter(Boolean)
      .join(' · ');
    this.source.hidden = !this.source.textContent;

    const left = counts.queued + counts.downloading + counts.processing;
    const parts = [
      STATES[status],
      ...(status === 'expanding' ? [] : [`${counts.completed} of ${counts.total} ready`]),
      ...(counts.failed ? [`${counts.failed} failed`] : []),
      ...(counts.cancelled ? [`${counts.cancelled} cancelled`] : []),
      ...(counts.expired ? [`${counts.expired} expired`] : []),
      ...(left && !isCollectionFinal(this.current) ? [`${left} to go`] : []),
    ];
    this.state.textContent = parts.join(' · ');
    this.cancelButton.hidden = isCollectionFinal(this.current);
    this.cancelButton.setAttribute('aria-label', `Cancel the rest of ${this.title.textContent}`);
    this.problem.textContent = status === 'failed' && error ? `${error.message} (${error.code})` : this.note;
    this.problem.hidden = !this.problem.textContent;
  }
}

import {
  describeClip,
  describeSource,
  formatBytes,
  formatDuration,
  isFinal,
  isNetworkError,
  ProblemError,
  problemSentence,
  type Download,
  type VideoDownloadClient,
} from '../../client/index.ts';

// One download in the list: its name, state and progress, with Cancel while it runs and the
// file's link once it is there. What it shows is what it was last given (see live.ts).

const STATES: Record<Download['status'], string> = {
  queued: 'Waiting to start',
  downloading: 'Downloading',
  processing: 'Making the file',
  completed: 'Ready',
  failed: 'Failed',
  cancelled: 'Cancelled',
  expired: 'Expired: the file is gone',
};

export function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

export function sentenceOf(error: unknown): string {
  if (error instanceof ProblemError) return problemSentence(error);
  if (isNetworkError(error)) return 'The service could not be reached; is it running?';
  return error instanceof Error ? error.message : String(error);
}

/** Tells a screen reader what happened, once (a live region of the page). */
export type Announce = (sentence: string) => void;

export class DownloadCard {
  readonly node = element('li', 'download');
  private readonly title = element('div', 'title');
  private readonly source = element('div', 'source');
  private readonly state = element('div', 'state');
  private readonly bar = element('progress', '');
  private readonly actions = element('div', 'actions');
  private readonly cancelButton = element('button', 'secondary', 'Cancel');
  private readonly link = element('a', 'save', 'Save the file');
  private readonly problem = element('p', 'error');
  /** Something that went wrong on the way (a cancel refused, the service unreachable), until the next news. */
  private note = '';

  constructor(
    private current: Download,
    private readonly client: () => VideoDownloadClient,
    private readonly announce: Announce,
  ) {
    this.node.dataset.id = current.id;
    this.bar.max = 100;
    this.cancelButton.type = 'button';
    this.cancelButton.addEventListener('click', () => void this.cancel());
    this.link.addEventListener('click', () => void this.recheck());
    this.actions.append(this.link, this.cancelButton);
    this.node.append(this.title, this.source, this.state, this.bar, this.actions, this.problem);
    this.render();
  }

  get download(): Download {
    return this.current;
  }

  /** The download as the service now has it; a change of status is announced. */
  update(download: Download): void {
    const changed = download.status !== this.current.status;
    this.current = download;
    this.note = '';
    this.render();
    if (changed) this.announce(`${this.title.textContent}: ${this.state.textContent}. ${this.problem.textContent}`.trim());
  }

  notice(sentence: string): void {
    this.note = sentence;
    this.render();
  }

  /**
   * Asked for again as its file is taken: a file lost from storage since the card was drawn turns
   * the card to expired (the service looks for the file as it answers), where it would stay Ready.
   */
  private async recheck(): Promise<void> {
    try {
      this.update(await this.client().get(this.current.id));
    } catch (error) {
      this.notice(sentenceOf(error));
    }
  }

  private async cancel(): Promise<void> {
    this.cancelButton.disabled = true;
    try {
      this.update(await this.client().cancel(this.current.id));
    } catch (error) {
      this.cancelButton.disabled = false;
      this.notice(sentenceOf(error));
    }
  }

  private render(): void {
    const { status, progress, file, error, url } = this.current;
    this.node.dataset.status = status;
    const found = describeSource(this.current.source);
    this.title.textContent = file?.filename ?? this.current.source?.title ?? url;
    // Under its name, where the file came from: the URL once the name is not the URL, how it was read, and the part kept.
    const clip = this.current.clip ? `clip ${describeClip(this.current.clip)}` : null;
    this.source.textContent = [this.title.textContent === url ? null : url, found ? `from ${found}` : null, clip].filter(Boolean).join(' · ');
    this.source.hidden = !this.source.textContent;

    const percent = status === 'completed' ? 100 : progress.percent;
    if (percent === null) this.bar.removeAttribute('value');
    else this.bar.value = percent;
    this.bar.hidden = isFinal(this.current) && status !== 'completed';
    this.bar.setAttribute('aria-label', `Progress of ${this.title.textContent}`);

    // A queued download with an error is waiting to try again after a failed attempt.
    const details = [status === 'queued' && error ? 'Waiting to try again' : STATES[status]];
    if (status === 'downloading' && progress.downloaded_bytes > 0) {
      details.push(
        progress.total_bytes ? `${formatBytes(progress.downloaded_bytes)} of ${formatBytes(progress.total_bytes)}` : formatBytes(progress.downloaded_bytes),
      );
      if (progress.speed_bytes_per_second) details.push(`${formatBytes(progress.speed_bytes_per_second)}/s`);
      if (progress.eta_seconds !== null) details.push(`${formatDuration(progress.eta_seconds)} left`);
    }
    if (status === 'queued' && error) details.push(error.message);
    if (status === 'completed' && file) details.push(formatBytes(file.size_bytes));
    this.state.textContent = details.join(' · ');

    const ready = status === 'completed' && this.current.download_url !== null;
    this.link.hidden = !ready;
    if (ready) {
      this.link.href = this.current.download_url!;
      this.link.download = file?.filename ?? '';
    }
    this.link.setAttribute('aria-label', `Save the file ${this.title.textContent}`);
    // Cancel while it runs; once it is ready, Remove (the same DELETE) lets the file go at once.
    const removable = status === 'completed';
    this.cancelButton.hidden = isFinal(this.current) && !removable;
    this.cancelButton.textContent = removable ? 'Remove' : 'Cancel';
    this.cancelButton.setAttribute('aria-label', `${removable ? 'Remove' : 'Cancel'} ${this.title.textContent}`);
    // Only a failure is the download's own error: a queued one's is an attempt's, and passes.
    this.problem.textContent = status === 'failed' && error ? `${error.message} (${error.code})` : this.note;
    this.problem.hidden = !this.problem.textContent;
  }
}

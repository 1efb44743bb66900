import { formatBytes, formatDuration, isFinal, ProblemError, problemSentence, type Download, type VideoDownloadClient } from '../../client/index.ts';

// One download in the list: its name, state and progress, kept live from the event stream, with
// Cancel while it runs and the file's link once it is there.

const STATES: Record<Download['status'], string> = {
  queued: 'Waiting to start',
  downloading: 'Downloading',
  processing: 'Making the file',
  completed: 'Ready',
  failed: 'Failed',
  cancelled: 'Cancelled',
  expired: 'Expired: the file is gone',
};

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

export function sentenceOf(error: unknown): string {
  if (error instanceof ProblemError) return problemSentence(error);
  return error instanceof Error ? `The service could not be reached (${error.message}).` : String(error);
}

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
  private readonly watching = new AbortController();

  constructor(
    private download: Download,
    private readonly client: () => VideoDownloadClient,
  ) {
    this.node.dataset.id = download.id;
    this.bar.max = 100;
    this.cancelButton.type = 'button';
    this.cancelButton.addEventListener('click', () => void this.cancel());
    this.actions.append(this.link, this.cancelButton);
    this.problem.setAttribute('role', 'alert');
    this.node.append(this.title, this.source, this.state, this.bar, this.actions, this.problem);
    this.render();
    if (!isFinal(download)) void this.follow();
  }

  /** Stops following the download (the card leaves the page). */
  close(): void {
    this.watching.abort();
  }

  private async follow(): Promise<void> {
    try {
      for await (const download of this.client().watch(this.download.id, { signal: this.watching.signal })) {
        this.download = download;
        this.render();
      }
    } catch (error) {
      if (!this.watching.signal.aborted) this.say(sentenceOf(error));
    }
  }

  private async cancel(): Promise<void> {
    this.cancelButton.disabled = true;
    try {
      this.download = await this.client().cancel(this.download.id);
      this.render();
    } catch (error) {
      this.cancelButton.disabled = false;
      this.say(sentenceOf(error));
    }
  }

  private say(sentence: string): void {
    this.problem.textContent = sentence;
    this.problem.hidden = false;
  }

  private render(): void {
    const { status, progress, file, error, url } = this.download;
    this.node.dataset.status = status;
    this.title.textContent = file?.filename ?? url;
    this.source.textContent = file ? url : '';
    this.source.hidden = !file;

    const percent = status === 'completed' ? 100 : progress.percent;
    if (percent === null) this.bar.removeAttribute('value');
    else this.bar.value = percent;
    this.bar.hidden = isFinal(this.download) && status !== 'completed';
    this.bar.setAttribute('aria-label', `Progress of ${this.title.textContent}`);

    const details = [STATES[status]];
    if (status === 'downloading') {
      details.push(
        progress.total_bytes ? `${formatBytes(progress.downloaded_bytes)} of ${formatBytes(progress.total_bytes)}` : formatBytes(progress.downloaded_bytes),
      );
      if (progress.speed_bytes_per_second) details.push(`${formatBytes(progress.speed_bytes_per_second)}/s`);
      if (progress.eta_seconds !== null) details.push(`${formatDuration(progress.eta_seconds)} left`);
    }
    if (status === 'completed' && file) details.push(formatBytes(file.size_bytes));
    this.state.textContent = details.join(' · ');

    const ready = status === 'completed' && this.download.download_url !== null;
    this.link.hidden = !ready;
    if (ready) {
      this.link.href = this.download.download_url!;
      this.link.download = file?.filename ?? '';
    }
    this.cancelButton.hidden = isFinal(this.download);
    if (error) this.say(`${error.message} (${error.code})`);
  }
}

import { isFinal, type VideoDownloadClient } from '../../client/index.ts';
import { sentenceOf, type DownloadCard } from './download-card.ts';

// Keeps the unfinished cards up to date. A browser opens at most six connections to one server
// (HTTP/1.1), and an event stream holds one for as long as it runs: were every card to stream,
// six running downloads would leave no connection for creating, cancelling or listing. So the
// newest few cards stream, and the rest are brought up to date by one list every few seconds; a card
// takes a stream when one comes free. A stream that fails (the service restarting, say) hands its
// card back to the asking, which keeps trying quietly until the service answers again.

/** Event streams the page holds at once: half of what the browser allows one server. */
const STREAMS = 3;
const REFRESH_MS = 2_000;

export class LiveCards {
  private readonly streaming = new Map<DownloadCard, AbortController>();
  /** Unfinished cards without a stream, the one to stream next first. */
  private waiting: DownloadCard[] = [];
  private refreshing = false;

  constructor(private readonly client: () => VideoDownloadClient) {
    setInterval(() => void this.refresh(), REFRESH_MS);
  }

  /** Follows `card` until its download ends; a card shown on top is the next to stream. */
  add(card: DownloadCard, first: boolean): void {
    if (isFinal(card.download)) return;
    if (first) this.waiting.unshift(card);
    else this.waiting.push(card);
    this.fill();
  }

  /** Stops following every card (the list is drawn again). */
  clear(): void {
    for (const stop of this.streaming.values()) stop.abort();
    this.streaming.clear();
    this.waiting = [];
  }

  private fill(): void {
    while (this.streaming.size < STREAMS && this.waiting.length) void this.stream(this.waiting.shift()!);
  }

  private async stream(card: DownloadCard): Promise<void> {
    const stop = new AbortController();
    this.streaming.set(card, stop);
    try {
      for await (const download of this.client().watch(card.download.id, { signal: stop.signal })) card.update(download);
    } catch (error) {
      if (stop.signal.aborted) return;
      card.notice(`${sentenceOf(error)} Trying again.`);
      // Back to the asking, and to a stream at its next round rather than at once: an error that
      // comes at once (a key no longer accepted) must not open stream after stream.
      this.waiting.push(card);
      return;
    } finally {
      if (this.streaming.get(card) === stop) this.streaming.delete(card);
    }
    this.fill();
  }

  /**
   * One list of what is unfinished brings every waiting card that is still running up to date; a
   * card missing from it has ended (or is past the list's 100), and is asked for on its own.
   */
  private async refresh(): Promise<void> {
    if (this.refreshing || !this.waiting.length) return;
    this.refreshing = true;
    try {
      const running = await this.client().list({ status: ['queued', 'downloading', 'processing'], limit: 100 });
      const byId = new Map(running.items.map((download) => [download.id, download]));
      for (const card of [...this.waiting]) {
        card.update(byId.get(card.download.id) ?? (await this.client().get(card.download.id)));
        if (isFinal(card.download)) this.waiting = this.waiting.filter((other) => other !== card);
      }
    } catch (error) {
      for (const card of this.waiting) card.notice(`${sentenceOf(error)} Trying again.`);
    } finally {
      this.refreshing = false;
    }
    this.fill();
  }
}

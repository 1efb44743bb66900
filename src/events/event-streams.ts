import type { ServerResponse } from 'node:http';
import type { DownloadChanges } from './changes.ts';

// Server-sent events of one download or collection each: the current state at once, then every
// change the database announces, until a final state. A stream costs no database connection of
// its own: the process's one listening connection says when something changed, and it is then
// read once for all the streams that follow it.

const KEEP_ALIVE_MS = 15_000;
const READ_RETRY_MS = 1_000;
/** A client that reads nothing while this much waits to be sent is cut off, not buffered for. */
const MAX_UNSENT_BYTES = 1024 * 1024;

/** What is streamed: how to read one (a row, or null when it is gone) and what its events are called. */
export type StreamedKind<R> = {
  /** The SSE `event:` name, and the topics' namespace. */
  event: string;
  read(id: string): Promise<R | null>;
  /** The statuses after which nothing changes: the stream ends after their event. */
  final: readonly string[];
};

export type StreamRequest<R> = {
  id: string;
  /** The id of the last event the client had (`Last-Event-ID`, decimal digits), when it reconnects. */
  lastEventId: string | undefined;
  present(row: R): { status: string };
};

/** The event streams open in this process, at most `max` at once. */
export class EventStreams {
  private readonly topics = new Map<string, Topic<unknown>>();
  private open = 0;

  constructor(
    private readonly changes: DownloadChanges,
    readonly max: number,
  ) {}

  get full(): boolean {
    return this.open >= this.max;
  }

  /** Streams the download or collection just read as `row`, on `res`, until it ends. */
  serve<R>(res: ServerResponse, kind: StreamedKind<R>, request: StreamRequest<R>, row: R): void {
    // A client that hung up while its row was read has fired 'close' already: counted now, its
    // place would never come back.
    if (res.destroyed || res.socket?.destroyed !== false) return;
    const key = `${kind.event}:${request.id}`;
    let topic = this.topics.get(key) as Topic<R> | undefined;
    if (!topic) {
      topic = new Topic(request.id, kind, this.changes, () => this.topics.delete(key));
      this.topics.set(key, topic);
    }
    const stream = new EventStream(res, kind, request);
    this.open += 1;
    res.once('close', () => {
      this.open -= 1;
      stream.close();
      topic.remove(stream);
    });
    topic.add(stream);
    stream.start(row);
    // `row` was read before the topic followed the download: a change announced in between went
    // to no one, so the row is read once more now (an unchanged row sends nothing).
    if (!stream.closed) topic.refresh();
  }

  /** Ends every stream (the process is shutting down). */
  closeAll(): void {
    for (const topic of [...this.topics.values()]) topic.closeAll();
  }
}

/** The streams of one download or collection, and the one read that a change makes for all of them. */
class Topic<R> {
  private readonly streams = new Set<EventStream<R>>();
  private readonly unfollow: () => void;
  private reading = false;
  private readAgain = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly id: string,
    private readonly kind: StreamedKind<R>,
    changes: DownloadChanges,
    private readonly onEmpty: () => void,
  ) {
    this.unfollow = changes.follow(id, () => this.refresh());
  }

  add(stream: EventStream<R>): void {
    this.streams.add(stream);
  }

  remove(stream: EventStream<R>): void {
    this.streams.delete(stream);
    if (this.streams.size > 0) return;
    clearTimeout(this.retry);
    this.unfollow();
    this.onEmpty();
  }

  closeAll(): void {
    for (const stream of [...this.streams]) stream.close();
  }

  /** Announcements that arrive while the row is being read make one more read, not one each. */
  refresh(): void {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    this.kind
      .read(this.id)
      .then(
        (row) => [...this.streams].forEach((stream) => (row ? stream.send(row) : stream.close())),
        // The database is away (a restart): the streams stay open, and the row is read again
        // until it answers, so that no change is lost and no stream ends short of its end.
        () => {
          clearTimeout(this.retry);
          if (this.streams.size > 0) this.retry = setTimeout(() => this.refresh(), READ_RETRY_MS);
        },
      )
      .finally(() => {
        this.reading = false;
        if (this.readAgain && this.streams.size > 0) {
          this.readAgain = false;
          this.refresh();
        }
      });
  }
}

class EventStream<R> {
  private nextId: number;
  private lastData = '';
  private ended = false;
  private readonly keepAlive: NodeJS.Timeout;

  constructor(
    private readonly res: ServerResponse,
    private readonly kind: StreamedKind<R>,
    private readonly request: StreamRequest<R>,
  ) {
    // The contract holds Last-Event-ID to 15 decimal digits (the validator refuses any other), so
    // that it counts on exactly, far below 2^53.
    this.nextId = Number(request.lastEventId ?? 0) + 1;
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  }

  start(row: R): void {
    this.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // nginx would otherwise hold events back in its buffer.
      'X-Accel-Buffering': 'no',
    });
    this.send(row);
  }

  send(row: R): void {
    if (this.ended) return;
    const resource = this.request.present(row);
    const data = JSON.stringify(resource);
    // A change that shows nowhere in the resource (a renewed lease) is no event.
    if (data !== this.lastData) {
      this.lastData = data;
      this.write(`event: ${this.kind.event}\nid: ${this.nextId++}\ndata: ${data}\n\n`);
    }
    if (this.kind.final.includes(resource.status)) this.close();
  }

  get closed(): boolean {
    return this.ended;
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.keepAlive);
    this.res.end();
  }

  private write(text: string): void {
    if (this.ended) return;
    if (this.res.writableLength > MAX_UNSENT_BYTES) {
      this.res.destroy();
      return;
    }
    this.res.write(text);
  }
}

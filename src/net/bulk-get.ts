import net, { type LookupFunction, type Socket } from 'node:net';
import tls from 'node:tls';
import { DownloadError } from '../core/errors.ts';
import { stopWriter, type FileWriter } from '../files/file-writer.ts';
import { ConnectionSlabs } from './read-buffers.ts';
import { headEnd, MAX_HEAD_BYTES, parseHead, plainLength, slowHead, type ResponseHead } from './response-head.ts';

// A GET for the bytes of a direct file, its body read straight from the socket 1 MiB at a time into
// the reused buffers of read-buffers.ts, not 64 KiB at a time into new ones as Node's client reads
// (docs/performance.md says what that costs). Only what the file's pieces need is spoken: one
// request per connection, no redirects (the file's URL is already the end of them), and a body
// framed by Content-Length alone.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * Reads that follow one another in a slab go to the disk as one write once they reach this, or
 * WRITE_AFTER_MS after the first of them: a socket read brings 64 to 150 KiB, and each write is a
 * round trip to the thread pool (docs/performance.md).
 */
const WRITE_BATCH_BYTES = 1024 * 1024;
const WRITE_AFTER_MS = 50;
const FIELD_VALUE = /^[\t -~\x80-\xff]*$/;

export type BulkRequest = {
  url: URL;
  headers: Record<string, string>;
  signal: AbortSignal;
  lookup?: LookupFunction;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
};

/** Given each chunk of the body in turn: the bytes of it to write, and whether nothing more is wanted after them. */
export type BulkChunkTaker = (chunk: Buffer) => { bytes: Buffer; enough: boolean };

export type BulkResponse = {
  url: string;
  status: number;
  headers: Record<string, string>;
  /** The body's length, when its head frames it so that it can be read here; null when it cannot be. */
  length: number | null;
  /**
   * Writes the body into `writer` through `take`, then ends the writer. A body cut short, or a
   * stalled source, cuts the writer short instead (what came is kept, but not taken as whole); a
   * cancel, or a writer that failed, destroys it.
   */
  readInto(writer: FileWriter, take: BulkChunkTaker): Promise<void>;
  /** Lets go of the body unread. */
  discard(): void;
};

/** Sends the GET and waits for the head of its answer. */
export function bulkGet(request: BulkRequest): Promise<BulkResponse> {
  return new BulkConnection(request).opened;
}

/** The request's head, or null when a header cannot be sent as it is (a name or value that would break the request). */
export function requestHead(url: URL, headers: Record<string, string>): string | null {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`];
  for (const [name, value] of Object.entries({ ...headers, connection: 'close' })) {
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value) || name.toLowerCase() === 'host') return null;
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

class BulkConnection {
  readonly opened: Promise<BulkResponse>;
  private resolveOpen!: (response: BulkResponse) => void;
  private failOpen!: (error: unknown) => void;
  private readonly socket: Socket;
  /** Where the body's reads are copied while they wait to be written. */
  private readonly slabs = new ConnectionSlabs();
  private head = Buffer.alloc(0);
  /** The bytes of the interim (1xx) answers read before the answer. */
  private interimBytes = 0;
  /** Body bytes that came with the head (in a copy of its own), held until the body is asked for. */
  private early: Buffer | null = null;
  private body: { writer: FileWriter; take: BulkChunkTaker; length: number; received: number; done(error?: Error): void } | null = null;
  private paused = false;
  private settled = false;
  /** Reads held in a slab, one after another, not yet handed to the writer. */
  private batch: { bytes: Buffer; written: Array<() => void>; timer: NodeJS.Timeout } | null = null;
  /** The connect timeout, then the time the whole head may take (headDeadline). */
  private headTimer: NodeJS.Timeout;

  constructor(private readonly request: BulkRequest) {
    const { url, signal } = request;
    this.opened = new Promise<BulkResponse>((resolve, reject) => {
      this.resolveOpen = resolve;
      this.failOpen = reject;
    });
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const onread = { buffer: this.slabs.readInto, callback: (count: number, buffer: Buffer) => this.read(buffer.subarray(0, count)) };
    const options = { host, port, lookup: request.lookup, onread };
    this.socket =
      url.protocol === 'https:'
        ? tls.connect({ ...options, servername: net.isIP(host) ? undefined : host, ALPNProtocols: ['http/1.1'] })
        : net.connect(options);
    this.headTimer = setTimeout(() => this.fail(timeout('The connection to the source timed out.')), request.connectTimeoutMs);
    this.socket.once('connect', () => {
      clearTimeout(this.headTimer);
      this.headTimer = setTimeout(() => this.fail(slowHead(request.idleTimeoutMs)), request.idleTimeoutMs);
      this.socket.setTimeout(request.idleTimeoutMs);
    });
    this.socket.on('timeout', () => this.idle());
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('end', () => this.ended());
    this.socket.on('close', () => this.ended());
    signal.addEventListener('abort', this.onAbort, { once: true });
    const text = requestHead(url, request.headers);
    if (signal.aborted) this.onAbort();
    else if (text === null) this.fail(new DownloadError('source_http_error', 'A header to send to the source holds characters a request cannot carry.'));
    // Byte for byte, as Node's client sends a header: a validator of obs-text (latin1) must come
    // back as the source sent it, not as its UTF-8, or If-Range never matches.
    else this.socket.write(text, 'latin1');
  }

  private readonly onAbort = () => this.fail(this.request.signal.reason);

  private readonly wake = () => {
    if (!this.paused || !this.body || this.settled) return;
    this.paused = false;
    this.socket.resume();
  };

  /** What the socket read; false to stop reading for now. */
  private read(bytes: Buffer): boolean {
    if (this.settled) return false;
    if (this.body) return this.deliver(bytes);
    const before = this.head.length;
    this.head = Buffer.concat([this.head, bytes]);
    let end = headEnd(this.head, Math.max(0, before - 3));
    let head: ResponseHead | null;
    for (;;) {
      // Interim answers count towards the limit too: an endless run of them is no answer.
      if (this.interimBytes + (end < 0 ? this.head.length : end) > MAX_HEAD_BYTES) {
        this.fail(new DownloadError('source_http_error', `The source's answer has a head over ${MAX_HEAD_BYTES} bytes.`));
        return false;
      }
      if (end < 0) return true;
      head = parseHead(this.head.subarray(0, end - 4));
      // An interim answer (100 Continue, 103 Early Hints) comes before the answer, as Node's client
      // reads it; 101 is no interim answer (nothing asked to switch), and is taken as the answer.
      if (!head || head.status >= 200 || head.status === 101) break;
      this.interimBytes += end;
      this.head = this.head.subarray(end);
      end = headEnd(this.head);
    }
    clearTimeout(this.headTimer);
    const rest = this.head.subarray(end);
    this.head = Buffer.alloc(0);
    if (!head) {
      this.fail(new DownloadError('source_http_error', "The source's answer is not valid HTTP."));
      return false;
    }
    if (rest.length > 0) this.early = rest;
    const length = head.status >= 200 && head.status !== 204 && head.status !== 304 ? plainLength(head.headers) : null;
    this.resolveOpen({
      url: this.request.url.toString(),
      status: head.status,
      headers: head.headers,
      length,
      readInto: (writer, take) => this.readInto(writer, take, length),
      discard: () => this.fail(null),
    });
    // Nothing more is read until someone asks for the body.
    this.paused = true;
    return false;
  }

  private readInto(writer: FileWriter, take: BulkChunkTaker, length: number | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (length === null || this.settled) {
        const error = this.settled
          ? new DownloadError('source_unreachable', 'The connection to the source was let go.', true)
          : new DownloadError('source_http_error', "The source's answer has no body framed by its length alone.");
        writer.destroy(error);
        return reject(error);
      }
      writer.on('error', (error) => this.fail(error));
      this.body = { writer, take, length, received: 0, done: (error) => (error === undefined ? resolve() : reject(error)) };
      const early = this.early;
      this.early = null;
      if (length === 0) return this.finish();
      if (early && !this.deliver(early)) return;
      this.paused = false;
      this.socket.resume();
    });
  }

  /** One read of the body; false to stop reading for now. */
  private deliver(chunk: Buffer): boolean {
    const body = this.body!;
    const within = chunk.subarray(0, body.length - body.received);
    body.received += within.length;
    let taken: { bytes: Buffer; enough: boolean };
    try {
      taken = body.take(within);
    } catch (error) {
      this.fail(error);
      return false;
    }
    if (taken.bytes.length > 0) {
      const { copy, written } = this.slabs.hold(taken.bytes);
      this.write(copy, written);
    }
    if (taken.enough || body.received === body.length) {
      this.finish();
      return false;
    }
    if (!this.slabs.readable) {
      // Reading waits for the disk.
      this.flush();
      this.paused = true;
      this.slabs.whenReadable(this.wake);
      return false;
    }
    return true;
  }

  /** `bytes`, held in a slab, to be written: with the reads before it when it follows them there. */
  private write(bytes: Buffer, written: () => void): void {
    const batch = this.batch;
    if (batch && bytes.buffer === batch.bytes.buffer && bytes.byteOffset === batch.bytes.byteOffset + batch.bytes.length) {
      batch.bytes = Buffer.from(bytes.buffer, batch.bytes.byteOffset, batch.bytes.length + bytes.length);
      batch.written.push(written);
    } else {
      this.flush();
      this.batch = { bytes, written: [written], timer: setTimeout(() => this.flush(), WRITE_AFTER_MS) };
    }
    if (this.batch!.bytes.length >= WRITE_BATCH_BYTES) this.flush();
  }

  /** Hands the reads held so far to the writer. */
  private flush(): void {
    const batch = this.batch;
    if (!batch || !this.body) return;
    this.batch = null;
    clearTimeout(batch.timer);
    this.body.writer.write(batch.bytes, () => batch.written.forEach((written) => written()));
  }

  /** The body has all it was to have: the connection goes, and the writer ends once its bytes are written. */
  private finish(): void {
    const body = this.body!;
    this.flush();
    this.settle();
    body.writer.once('finish', () => body.done());
    body.writer.once('error', (error) => body.done(error));
    body.writer.end();
  }

  /** The source closed the connection before the body was whole. */
  private ended(): void {
    const body = this.body;
    const received = body ? `after ${body.received} of ${body.length} bytes` : 'before it answered';
    this.fail(new DownloadError('source_unreachable', `The source closed the connection ${received}.`, true));
  }

  private idle(): void {
    // Waiting on the disk, or on someone to ask for the body, is not the source's delay.
    if (this.paused) {
      this.socket.setTimeout(this.request.idleTimeoutMs);
      return;
    }
    // An event loop held up for longer than the timeout runs its timers before the reads that
    // came meanwhile: those are looked at first, so that only a source that sent nothing fails.
    const bytesRead = this.socket.bytesRead;
    setImmediate(() => {
      if (this.settled) return;
      if (this.paused || this.socket.bytesRead !== bytesRead) this.socket.setTimeout(this.request.idleTimeoutMs);
      else this.fail(timeout('The source stopped responding.'));
    });
  }

  /**
   * Stops everything; `error` goes to whoever waits (null when the body is let go on purpose). The
   * writer still writes what the source sent before it failed (stopWriter).
   */
  private fail(error: unknown): void {
    if (this.settled) return;
    const body = this.body;
    // What came before the failure is written all the same (stopWriter).
    if (error !== null && !this.request.signal.aborted) this.flush();
    this.settle();
    if (error === null) return;
    this.failOpen(error);
    if (body) {
      stopWriter(body.writer, error as Error, this.request.signal);
      body.done(error as Error);
    }
  }

  private settle(): void {
    this.settled = true;
    // Reads not handed over by now are not to be written (a cancel).
    if (this.batch) clearTimeout(this.batch.timer);
    this.batch = null;
    this.slabs.close();
    clearTimeout(this.headTimer);
    this.request.signal.removeEventListener('abort', this.onAbort);
    this.socket.destroy();
  }
}

function timeout(message: string): DownloadError {
  return new DownloadError('source_timeout', message, true);
}

import type { Worker } from 'node:worker_threads';
import { startThread } from '../core/threads.ts';
import type { HashReply, HashRequest } from './hash-requests.ts';

// sha256 off the event loop: one thread, kept for the life of the process, hashes every file the
// service keeps (hash-worker.ts). A file still being written is followed: the thread reads its
// bytes back as they become whole, so that its hash is ready soon after its last byte.

type Waiter = { resolve(sha256: string): void; reject(error: Error): void };

class HashThread {
  private thread: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();

  /** Starts the thread now rather than at the first file (its few MB belong to the idle service). */
  start(): Worker {
    if (this.thread) return this.thread;
    const thread = startThread(new URL('./hash-worker.ts', import.meta.url));
    thread.on('message', (reply: HashReply) => {
      const waiter = this.waiting.get(reply.id);
      if (!waiter) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) thread.unref();
      if ('sha256' in reply) waiter.resolve(reply.sha256);
      else waiter.reject(new Error(`The file could not be hashed: ${reply.failure}.`));
    });
    // An error with no listener would end the process; the jobs waiting hear of it through the exit.
    thread.on('error', () => {});
    thread.once('exit', () => {
      if (this.thread === thread) this.thread = null;
      const waiting = [...this.waiting.values()];
      this.waiting.clear();
      for (const waiter of waiting) waiter.reject(new Error('The thread hashing the file stopped.'));
    });
    // An idle thread must not keep the process alive.
    thread.unref();
    this.thread = thread;
    return thread;
  }

  /** A job following `file` on the thread that is running now. */
  follow(file: string): FollowedHash {
    const thread = this.start();
    const id = this.nextId++;
    thread.postMessage({ op: 'open', id, file } satisfies HashRequest);
    return new FollowedHash(id, thread, (size, signal) => this.digest(thread, id, size, signal));
  }

  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    await thread?.terminate();
  }

  private digest(thread: Worker, id: number, size: number | null, signal?: AbortSignal): Promise<string> {
    if (thread !== this.thread) return Promise.reject(new Error('The thread hashing the file stopped.'));
    return new Promise<string>((resolve, reject) => {
      const onAbort = () => {
        this.waiting.delete(id);
        if (this.waiting.size === 0) thread.unref();
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort's reason goes on as it came, for the caller to recognise.
        reject(signal!.reason);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.waiting.set(id, {
        resolve: (sha256) => (done(), resolve(sha256)),
        reject: (error) => (done(), reject(error)),
      });
      thread.ref();
      thread.postMessage({ op: 'digest', id, size } satisfies HashRequest);
    });
  }
}

/** The thread is told of a file's growth in steps of at least this: each message costs the event loop. */
const STEP_BYTES = 8 * 1024 * 1024;

/** The hash of one file as the thread reads it. */
export class FollowedHash {
  private ended = false;
  private told = 0;

  constructor(
    private readonly id: number,
    private readonly thread: Worker,
    private readonly digestOn: (size: number | null, signal?: AbortSignal) => Promise<string>,
  ) {}

  /** Bytes [0, end) of the file are written: the thread may read them. */
  upTo(end: number): void {
    if (this.ended || end - this.told < STEP_BYTES) return;
    this.told = end;
    this.thread.postMessage({ op: 'upTo', id: this.id, end } satisfies HashRequest);
  }

  /** The sha256 (hex) of the file's first `size` bytes (null: all of them), read to its end first; fails when fewer could be read. */
  digest(size: number | null, signal?: AbortSignal): Promise<string> {
    this.ended = true;
    return this.digestOn(size, signal);
  }

  /** Lets the job go without a hash. */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.thread.postMessage({ op: 'drop', id: this.id } satisfies HashRequest);
  }
}

export const hashThread = new HashThread();

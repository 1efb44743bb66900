import type { Worker } from 'node:worker_threads';
import { startThread } from '../../core/threads.ts';
import { DownloadError } from '../../core/errors.ts';
import { DOCUMENT_NAMES, type DocumentKind } from '../document-kinds.ts';
import type { PageMedia } from '../html/page-media.ts';
import type { ListedPage } from '../listing/page.ts';
import type { DocumentReply, DocumentRequests } from './requests.ts';

// Playlists, manifests and pages are an attacker's text, and their parsers were written for honest
// ones. They are read in worker threads with a heap of their own and a time budget: a document that
// exhausts either costs its download a clear error and its thread, never the API's event loop or
// the process. Threads are kept for the next document, because starting one costs a few hundred ms.

export type ReaderLimits = { heapMb: number; timeoutMs: number };

const DEFAULT_LIMITS: ReaderLimits = { heapMb: 256, timeoutMs: 15_000 };
const MAX_IDLE = 2;

/** The thread runs worker.ts beside this file (worker.js once built). */
function spawnThread(heapMb: number): Worker {
  return startThread(new URL('./worker.ts', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 32 } });
}

/**
 * The memory of the input's byte fields that is theirs alone, to be moved to the thread: the
 * caller's view of it is empty afterwards. A view into memory shared with others (Node's pool of
 * small buffers) is copied instead.
 */
function movable(input: unknown): ArrayBuffer[] {
  return Object.values(input as Record<string, unknown>).flatMap((value) =>
    value instanceof Uint8Array && value.buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength
      ? [value.buffer]
      : [],
  );
}

export class DocumentSandbox {
  private readonly idle: Worker[] = [];
  private readonly threads = new Set<Worker>();

  constructor(private readonly limits: ReaderLimits = DEFAULT_LIMITS) {}

  hls(input: DocumentRequests['hls']['input'], signal: AbortSignal): Promise<DocumentRequests['hls']['reply']> {
    return this.read('hls', input, signal) as Promise<DocumentRequests['hls']['reply']>;
  }

  dash(input: DocumentRequests['dash']['input'], signal: AbortSignal): Promise<DocumentRequests['dash']['reply']> {
    return this.read('dash', input, signal) as Promise<DocumentRequests['dash']['reply']>;
  }

  page(input: { bytes: Uint8Array; pageUrl: string }, signal: AbortSignal): Promise<PageMedia> {
    return this.read('page', input, signal) as Promise<PageMedia>;
  }

  /** The page as a collection lists it (listing/page.ts). */
  listedPage(input: { bytes: Uint8Array; pageUrl: string; listLimit: number }, signal: AbortSignal): Promise<ListedPage> {
    return this.read('page', input, signal) as Promise<ListedPage>;
  }

  ttml(input: DocumentRequests['ttml']['input'], signal: AbortSignal): Promise<DocumentRequests['ttml']['reply']> {
    return this.read('ttml', input, signal) as Promise<DocumentRequests['ttml']['reply']>;
  }

  /** Starts a thread to keep idle, so that the first document does not wait for one to start. */
  prestart(): void {
    if (this.threads.size > 0) return;
    const thread = this.thread();
    thread.unref();
    this.idle.push(thread);
  }

  async close(): Promise<void> {
    const threads = [...this.threads];
    this.idle.length = 0;
    this.threads.clear();
    await Promise.all(threads.map((thread) => thread.terminate()));
  }

  private thread(): Worker {
    const kept = this.idle.pop();
    if (kept) {
      kept.ref();
      return kept;
    }
    const thread = spawnThread(this.limits.heapMb);
    // An error with no listener would end the process; the read in progress hears of it anyway.
    thread.on('error', () => {});
    thread.once('exit', () => {
      this.threads.delete(thread);
      const at = this.idle.indexOf(thread);
      if (at >= 0) this.idle.splice(at, 1);
    });
    this.threads.add(thread);
    return thread;
  }

  private read(kind: DocumentKind, input: unknown, signal: AbortSignal): Promise<unknown> {
    signal.throwIfAborted();
    const thread = this.thread();
    const what = DOCUMENT_NAMES[kind];
    return new Promise((resolve, reject) => {
      const settle = (reusable: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        thread.off('message', onMessage).off('error', onError).off('exit', onExit);
        if (reusable && this.idle.length < MAX_IDLE && this.threads.has(thread)) {
          // An idle thread must not keep the process alive.
          thread.unref();
          this.idle.push(thread);
        } else {
          void thread.terminate();
        }
      };
      const onMessage = (reply: DocumentReply) => {
        settle(true);
        if (reply.ok) resolve(reply.value);
        else reject(new DownloadError(reply.error.code, reply.error.message, reply.error.retryable));
      };
      const onError = (error: Error & { code?: string }) => {
        settle(false);
        const reason = error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `needs more than ${this.limits.heapMb} MB to read` : `could not be read (${error.message})`;
        reject(new DownloadError(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'source_too_large' : 'unsupported_source', `The ${what} ${reason}.`));
      };
      const onExit = () => {
        settle(false);
        reject(new DownloadError('processing_failed', `The thread reading the ${what} stopped before it answered.`));
      };
      const onAbort = () => {
        settle(false);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an abort's reason goes on as it came, for the caller to recognise.
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        settle(false);
        reject(new DownloadError('processing_failed', `Reading the ${what} took longer than ${this.limits.timeoutMs / 1000} seconds.`));
      }, this.limits.timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      thread.on('message', onMessage).once('error', onError).once('exit', onExit);
      thread.postMessage({ kind, input }, movable(input));
    });
  }
}

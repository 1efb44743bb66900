import { createParser } from 'eventsource-parser';
import type { Client } from 'openapi-fetch';
import type { paths } from '../../generated/api.ts';
import { isNetworkError, ProblemError } from './problem.ts';
import { isCollectionFinal, isFinal, type Collection, type Download } from './types.ts';

/** Tries in a row that bring no new state before watch gives up (the server or the network is gone). */
const MAX_RECONNECTS = 5;
/** The wait before a try; it doubles with each try that brought nothing, up to the cap (1, 2, 4, 8, 10 s). */
const RECONNECT_DELAY_MS = 1_000;
const MAX_RECONNECT_DELAY_MS = 10_000;
/** Answers that say the service is not there right now (restarting behind a proxy, or at its stream limit), not no. */
const UNAVAILABLE = new Set([502, 503, 504]);

export type WatchOptions = { signal?: AbortSignal };

type ApiClient = Client<paths, `${string}/${string}`>;

/** Opens one event stream of a resource, with the given headers; as openapi-fetch answers. */
type Open = (headers: Record<string, string>, signal: AbortSignal | undefined) => Promise<{ response: Response; error?: unknown }>;

/** What tells one resource's stream from another's: its event name, when it is over, and what to call it in a problem. */
type Followed<T> = { open: Open; event: string; isFinal: (state: T) => boolean; what: string };

/** A download's states: `event: download` on GET /downloads/{id}. */
export function watchDownload(client: ApiClient, id: string, options: WatchOptions = {}): AsyncGenerator<Download, void, undefined> {
  const open: Open = (headers, signal) =>
    client.GET('/downloads/{download_uuid}', { params: { path: { download_uuid: id } }, headers, parseAs: 'stream', signal });
  return watchStates({ open, event: 'download', isFinal, what: `download ${id}` }, options);
}

/** A collection's states (its status and counts): `event: collection` on GET /collections/{id}. */
export function watchCollection(client: ApiClient, id: string, options: WatchOptions = {}): AsyncGenerator<Collection, void, undefined> {
  const open: Open = (headers, signal) =>
    client.GET('/collections/{collection_id}', { params: { path: { collection_id: id } }, headers, parseAs: 'stream', signal });
  return watchStates({ open, event: 'collection', isFinal: isCollectionFinal, what: `collection ${id}` }, options);
}

/**
 * The resource's states as the service's event stream sends them: the current one first, then
 * each change, ending after a final status. A stream that drops before then (a proxy, a restart
 * of the API process) is opened again with `Last-Event-ID`, and the server sends the current state
 * again, which is yielded only if it differs from the last one yielded; so is a stream that could
 * not be opened for the moment: a refused connection, or a 502, 503 (its Retry-After is honoured)
 * or 504. Tries are bounded: after MAX_RECONNECTS in a row that brought no new state, watch throws
 * the last answer's ProblemError, or a 502 one when no answer came.
 */
async function* watchStates<T>({ open, event: name, isFinal: ended, what }: Followed<T>, { signal }: WatchOptions): AsyncGenerator<T, void, undefined> {
  let lastEventId: string | undefined;
  let lastData: string | undefined;
  let failures = 0;
  for (;;) {
    signal?.throwIfAborted();
    let refusal: ProblemError | undefined;
    let retryAfterMs: number | undefined;
    const opened = await open({ Accept: 'text/event-stream', ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) }, signal).catch((error: unknown) => {
      if (signal?.aborted || !isNetworkError(error)) throw error;
      return undefined;
    });
    if (opened && !opened.response.ok) {
      // openapi-fetch has read an error's body already (as JSON), whatever parseAs says.
      refusal = await ProblemError.fromResponse(opened.response, opened.error);
      if (!UNAVAILABLE.has(opened.response.status)) throw refusal;
      retryAfterMs = Number(opened.response.headers.get('retry-after')) * 1000 || undefined;
    } else if (opened) {
      const body = opened.response.body;
      if (!body) throw new ProblemError(502, { type: 'about:blank', title: 'Empty stream', status: 502, detail: 'The event stream had no body.' });
      try {
        for await (const event of events(body, name)) {
          lastEventId = event.id ?? lastEventId;
          // Only news counts as progress: a stream that ends after repeating the last state again and again is not.
          if (event.data === lastData) continue;
          failures = 0;
          lastData = event.data;
          const state = JSON.parse(event.data) as T;
          yield state;
          if (ended(state)) return;
        }
      } catch (error) {
        // A cut connection ends the body with a network error; anything else (an abort among them) is the caller's.
        if (signal?.aborted || !isNetworkError(error)) throw error;
      } finally {
        await body.cancel().catch(() => {});
      }
    }
    if (++failures > MAX_RECONNECTS) {
      throw (
        refusal ??
        new ProblemError(502, {
          type: 'about:blank',
          title: 'Event stream lost',
          status: 502,
          detail: `The event stream of ${what} could not be followed: the service kept ending it or could not be reached.`,
        })
      );
    }
    await pause(retryAfterMs ?? Math.min(RECONNECT_DELAY_MS * 2 ** (failures - 1), MAX_RECONNECT_DELAY_MS), signal);
  }
}

type StreamEvent = { id?: string; data: string };

/** The events called `name` of a text/event-stream body, parsed with eventsource-parser. */
async function* events(body: ReadableStream<Uint8Array>, name: string): AsyncGenerator<StreamEvent> {
  const queue: StreamEvent[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if ((event.event ?? 'message') === name) queue.push({ id: event.id, data: event.data });
    },
  });
  const decoder = new TextDecoder();
  // A reader rather than `for await` over the body: not every browser makes a ReadableStream iterable.
  const reader = body.getReader();
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      parser.feed(decoder.decode(read.value, { stream: true }));
      yield* queue.splice(0);
    }
  } finally {
    reader.releaseLock();
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

import { createParser } from 'eventsource-parser';
import type { Client } from 'openapi-fetch';
import type { paths } from '../../generated/api.ts';
import { isNetworkError, ProblemError } from './problem.ts';
import { isFinal, type Download } from './types.ts';

/** Reconnects in a row that bring no event before watch gives up (the server or the network is gone). */
const MAX_RECONNECTS = 5;
const RECONNECT_DELAY_MS = 1_000;

export type WatchOptions = { signal?: AbortSignal };

/**
 * The download's states as the service's event stream sends them: the current one first, then
 * each change, ending after a final status. A stream that drops before then (a proxy, a restart
 * of the API process) is opened again with `Last-Event-ID`, and the server sends the current state
 * again, which is yielded only if it differs from the last one yielded; so is one the server
 * refused for being at its stream limit (503), after its Retry-After. Reconnects are bounded:
 * after MAX_RECONNECTS in a row that brought no event, watch throws a ProblemError (502).
 */
export async function* watchDownload(
  client: Client<paths, `${string}/${string}`>,
  id: string,
  { signal }: WatchOptions = {},
): AsyncGenerator<Download, void, undefined> {
  let lastEventId: string | undefined;
  let lastData: string | undefined;
  let failures = 0;
  for (;;) {
    signal?.throwIfAborted();
    const { response, error } = await client.GET('/downloads/{download_uuid}', {
      params: { path: { download_uuid: id } },
      headers: { Accept: 'text/event-stream', ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
      parseAs: 'stream',
      signal,
    });
    if (response.status === 503 && failures < MAX_RECONNECTS) {
      await response.body?.cancel();
      failures++;
      await pause(Number(response.headers.get('retry-after')) * 1000 || RECONNECT_DELAY_MS, signal);
      continue;
    }
    // openapi-fetch has read an error's body already (as JSON), whatever parseAs says.
    if (!response.ok) throw await ProblemError.fromResponse(response, error);
    if (!response.body)
      throw new ProblemError(response.status, { type: 'about:blank', title: 'Empty stream', status: 502, detail: 'The event stream had no body.' });

    try {
      for await (const event of events(response.body)) {
        failures = 0;
        lastEventId = event.id ?? lastEventId;
        if (event.data === lastData) continue;
        lastData = event.data;
        const download = JSON.parse(event.data) as Download;
        yield download;
        if (isFinal(download)) return;
      }
    } catch (error) {
      // A cut connection ends the body with a network error; anything else (an abort among them) is the caller's.
      if (signal?.aborted || !isNetworkError(error)) throw error;
    } finally {
      await response.body.cancel().catch(() => {});
    }
    if (++failures > MAX_RECONNECTS) {
      throw new ProblemError(502, {
        type: 'about:blank',
        title: 'Event stream lost',
        status: 502,
        detail: `The event stream of download ${id} kept ending before the download did.`,
      });
    }
    await pause(RECONNECT_DELAY_MS, signal);
  }
}

type StreamEvent = { id?: string; data: string };

/** The `download` events of a text/event-stream body, parsed with eventsource-parser. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const queue: StreamEvent[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if ((event.event ?? 'message') === 'download') queue.push({ id: event.id, data: event.data });
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

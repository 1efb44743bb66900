import http, { type IncomingHttpHeaders } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Download } from './api.ts';
import type { Collection } from './collections.ts';
import { checkResponse } from './openapi.ts';

// A client of GET /downloads/{id} (or /collections/{id}) with `Accept: text/event-stream`, as a
// browser's EventSource would read it: every event's data is checked against the Download (or
// Collection) schema of openapi.yaml, and the stream's own answer against the operation.

export type DownloadEvent = { event: string | undefined; id: string | undefined; download: Download };

export type EventStream<E = DownloadEvent> = {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every event so far, in the order they arrived. */
  readonly events: readonly E[];
  /** Comment lines (keep-alives) so far. */
  readonly comments: number;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Resolves once `count` events have arrived (or rejects when the stream ends first, or after `timeoutMs`). */
  waitForEvents(count: number, timeoutMs?: number): Promise<E[]>;
  close(): void;
};

export type CollectionEvent = { event: string | undefined; id: string | undefined; collection: Collection };

/** The event's data, checked against the JSON answer of the operation at `pathTemplate`. */
function checkData(message: EventSourceMessage, pathTemplate: string): unknown {
  const data = JSON.parse(message.data) as unknown;
  checkResponse({ method: 'GET', pathTemplate, status: 200, headers: { 'content-type': 'application/json' }, body: data, hasBody: true });
  return data;
}

/**
 * Opens the event stream of download `id` under `baseUrl`. A non-200 answer resolves too, with
 * its status and no events (its body is checked against the spec).
 */
export function openEventStream(baseUrl: string, id: string, headers: Record<string, string> = {}): Promise<EventStream> {
  return openStream(`${baseUrl}/downloads/${id}`, '/downloads/{download_uuid}', headers, (message) => ({
    event: message.event,
    id: message.id,
    download: checkData(message, '/downloads/{download_uuid}') as Download,
  }));
}

/** The same for collection `id`: its `collection` events, each checked against the Collection schema. */
export function openCollectionStream(baseUrl: string, id: string, headers: Record<string, string> = {}): Promise<EventStream<CollectionEvent>> {
  return openStream(`${baseUrl}/collections/${id}`, '/collections/{collection_id}', headers, (message) => ({
    event: message.event,
    id: message.id,
    collection: checkData(message, '/collections/{collection_id}') as Collection,
  }));
}

function openStream<E>(
  url: string,
  pathTemplate: string,
  headers: Record<string, string>,
  toEvent: (message: EventSourceMessage) => E,
): Promise<EventStream<E>> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      const events: E[] = [];
      let comments = 0;
      let failure: Error | undefined;
      const waiters = new Set<() => void>();
      const notify = () => waiters.forEach((wake) => wake());
      const parser = createParser({
        onEvent: (message) => {
          try {
            events.push(toEvent(message));
          } catch (error) {
            failure ??= error as Error;
          }
          notify();
        },
        onComment: () => comments++,
      });
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode === 200) parser.feed(chunk);
        else text += chunk;
      });
      let finished = false;
      const ended = new Promise<void>((done) =>
        res.on('close', () => {
          finished = true;
          notify();
          done();
        }),
      );
      if (res.statusCode !== 200) {
        void ended.then(() =>
          checkResponse({
            method: 'GET',
            pathTemplate,
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text,
            hasBody: text.length > 0,
          }),
        );
      } else {
        checkResponse({ method: 'GET', pathTemplate, status: 200, headers: res.headers, body: '', hasBody: true });
      }
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        get comments() {
          return comments;
        },
        ended,
        waitForEvents(count, timeoutMs = 30_000) {
          return new Promise((done, fail) => {
            const timer = setTimeout(() => finish(new Error(`only ${events.length} of ${count} events arrived within ${timeoutMs} ms`)), timeoutMs);
            const finish = (error?: Error) => {
              clearTimeout(timer);
              waiters.delete(check);
              if (error) fail(error);
              else done(events.slice(0, count));
            };
            const check = () => {
              if (failure) finish(failure);
              else if (events.length >= count) finish();
              else if (finished) finish(new Error(`the stream ended after ${events.length} of ${count} events`));
            };
            waiters.add(check);
            check();
          });
        },
        close: () => request.destroy(),
      });
    });
    request.on('error', reject);
  });
}

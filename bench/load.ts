import autocannon from 'autocannon';

// HTTP load from autocannon's programmatic API. Both sides of every comparison get the same
// client, on the same cores, so what the client costs weighs on both alike.

type LoadOptions = {
  url: string;
  connections: number;
  durationSeconds: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
};

export type LoadResult = { requestsPerSecond: number; bytesPerSecond: number; p50Ms: number; p99Ms: number };

/**
 * autocannon appends every response body to a string, which caps a connection at about 50 MB/s
 * of file bodies and measures itself instead of the server; and it counts a response's bytes only
 * once it is complete, which undercounts large files. So the body chunks are counted here, and
 * dropped.
 */
function countBodies(counter: { bytes: number }) {
  return (client: autocannon.Client): void => {
    const queue = (client as unknown as { pipelinedRequests?: { addBody?: unknown } }).pipelinedRequests;
    if (typeof queue?.addBody !== 'function') throw new Error('autocannon changed its internals: bench/load.ts cannot count response bodies');
    queue.addBody = (chunk: Buffer) => {
      counter.bytes += chunk.length;
    };
  };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const counter = { bytes: 0 };
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    setupClient: countBodies(counter),
  });
  const failed = result.errors + result.timeouts + result.non2xx;
  if (failed > 0) {
    throw new Error(
      `${options.method ?? 'GET'} ${options.url}: ${failed} of ${result.requests.sent} requests failed (${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx)`,
    );
  }
  if (counter.bytes === 0) throw new Error(`${options.url}: no response in ${options.durationSeconds} s`);
  return {
    requestsPerSecond: result.requests.total / result.duration,
    bytesPerSecond: counter.bytes / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
  };
}

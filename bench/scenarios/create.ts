import getPort from 'get-port';
import type { Bench } from '../context.ts';
import { runLoad, type LoadResult } from '../load.ts';
import type { Server } from '../processes.ts';
import { median, milliseconds, perSecond, ratioAtLeast, row, type Row, type Target } from '../table.ts';
import { takeTurns } from '../turns.ts';

// Scenario 4: POST /downloads under 50 connections, against an Express handler that does one
// INSERT into the same database. The service runs with ROLE=api, so no worker picks up (and
// fails) the downloads it creates while it is measured.

const CONNECTIONS = 32;
const ROUNDS = 5;
const SECONDS = 3;
const WARM_UP_SECONDS = 2;

export async function benchCreate(bench: Bench, apiService: Server, insertApi: Server): Promise<Row[]> {
  // A port nothing listens on: the downloads are never meant to be fetched.
  const body = JSON.stringify({ url: `http://127.0.0.1:${await getPort({ host: '127.0.0.1' })}/never-fetched.mp4` });
  const post = (server: Server, durationSeconds: number) => () =>
    runLoad({
      url: `${server.url}/downloads`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      connections: CONNECTIONS,
      durationSeconds,
    });

  await post(apiService, WARM_UP_SECONDS)();
  await post(insertApi, WARM_UP_SECONDS)();
  const label = 'Express + INSERT';
  const results = await takeTurns(
    bench,
    ROUNDS,
    { ours: post(apiService, SECONDS), theirs: post(insertApi, SECONDS) },
    (latest) => `service ${summary(latest.ours)}; ${label} ${summary(latest.theirs)}`,
  );
  const figure = `POST /downloads, ${CONNECTIONS} connections`;
  const medianOf = (results: LoadResult[], pick: (result: LoadResult) => number) => median(results.map(pick));
  const compare = (what: string, pick: (result: LoadResult) => number, better: 'higher' | 'lower', format: (value: number) => string, target: Target) =>
    row(`${figure}: ${what}`, medianOf(results.ours, pick), { label, value: medianOf(results.theirs, pick) }, better, format, target);
  // The floor is on throughput; the latencies follow from it at a fixed number of connections.
  return [
    compare('throughput', (r) => r.requestsPerSecond, 'higher', perSecond, ratioAtLeast(0.35)),
    compare('p50 latency', (r) => r.p50Ms, 'lower', milliseconds, null),
    compare('p99 latency', (r) => r.p99Ms, 'lower', milliseconds, null),
  ];
}

function summary(result: LoadResult): string {
  return `${perSecond(result.requestsPerSecond)}, p50 ${milliseconds(result.p50Ms)}, p99 ${milliseconds(result.p99Ms)}`;
}

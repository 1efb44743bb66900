import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { databaseAnswer } from '../db/deadline.ts';

// What /metrics tells Prometheus about this process: Node's defaults, and the service's own
// counters. Counters count what this process did (scrape every API and worker process); the job
// gauge is read from pg-boss at scrape time, so any one process reports the whole queue.

export class Metrics {
  readonly registry = new Registry();

  readonly created = new Counter({ name: 'vds_downloads_created_total', help: 'Downloads created.', registers: [this.registry] });

  readonly finished = new Counter({
    name: 'vds_downloads_finished_total',
    help: 'Downloads that reached a final status, by status and source kind.',
    labelNames: ['status', 'source'] as const,
    registers: [this.registry],
  });

  readonly bytes = new Counter({
    name: 'vds_download_bytes_total',
    help: 'Bytes of completed files, by source kind.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly duration = new Histogram({
    name: 'vds_download_duration_seconds',
    help: 'Time from the start of an attempt to the completed file, by source kind.',
    labelNames: ['source'] as const,
    buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600],
    registers: [this.registry],
  });

  readonly requests = new Histogram({
    name: 'vds_http_request_duration_seconds',
    help: 'HTTP requests, by operation and status.',
    labelNames: ['operation', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly hedges = new Counter({
    name: 'vds_segment_hedges_total',
    help: 'Slow segments asked for a second time (the first answer wins).',
    registers: [this.registry],
  });

  readonly webhooks = new Counter({
    name: 'vds_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  constructor(jobCounts?: () => Promise<{ queue: string; state: string; count: number }[]>) {
    collectDefaultMetrics({ register: this.registry });
    if (jobCounts) {
      new Gauge({
        name: 'vds_jobs',
        help: 'Jobs in the queues, by queue and state.',
        labelNames: ['queue', 'state'] as const,
        registers: [this.registry],
        async collect() {
          this.reset();
          // A database that is down or stalled leaves these series out rather than failing the
          // scrape: the process's own metrics matter most during an outage.
          const counts = await databaseAnswer(jobCounts()).catch(() => undefined);
          for (const { queue, state, count } of counts ?? []) this.set({ queue, state }, count);
        },
      });
    }
  }
}

import express from 'express';
import { databaseAnswer } from '../../db/deadline.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { Metrics } from '../../operations/metrics.ts';
import type { FileStore } from '../../storage/index.ts';
import { HttpProblem } from '../problem.ts';

// For orchestrators and Prometheus: liveness, readiness, metrics. None of them counts against the
// rate limits; only /metrics (which says how busy the service is) needs a key when there are keys,
// asked for in app.ts.

type OperationsDeps = { downloads: DownloadRepository; files: FileStore; metrics: Metrics; ytdlpVersion: string | null };

export function operationsRoutes({ downloads, files, metrics, ytdlpVersion }: OperationsDeps): express.Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    try {
      await databaseAnswer(downloads.ping());
    } catch (error) {
      throw new HttpProblem(503, `The database does not answer (${(error as Error).message}).`, { 'Retry-After': '5' });
    }
    // A store that cannot take files would have every download fail at its end.
    const problem = await files.problem();
    if (problem) throw new HttpProblem(503, `Files cannot be stored: ${problem}.`, { 'Retry-After': '5' });
    res.json({ status: 'ready', yt_dlp: ytdlpVersion });
  });
  router.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}

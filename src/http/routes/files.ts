import { create, encodeExtended } from 'content-disposition';
import { Router, type Response } from 'express';
import { servedType } from '../../media/containers.ts';
import { TokenLookup } from '../../downloads/read.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { Config } from '../../config/index.ts';
import type { LocalStorage } from '../../storage/local.ts';
import { HttpProblem } from '../problem.ts';
import { sendStoredFile } from '../send-file.ts';

const FILE_HEADERS = ['Content-Type', 'Content-Disposition', 'ETag', 'Last-Modified', 'Cache-Control'];

/**
 * GET and HEAD /download/{token}: the file straight from storage in constant memory, with ranges,
 * HEAD and the conditional requests against the ETag and Last-Modified set here. With FILE_OFFLOAD=nginx the service only decides whether the token may
 * have the file, and the nginx in front sends it (sendfile, ranges and conditional requests
 * against its own validators, from the file's time and size).
 */
export function fileRoutes(deps: { downloads: DownloadRepository; storage: LocalStorage; config: Config }): Router {
  const router = Router();
  const tokens = new TokenLookup(deps.downloads);

  router.get('/download/:token', async (req, res) => {
    const row = await tokens.find(req.params.token);
    if (!row || !['completed', 'expired'].includes(row.status) || !row.completedAt || !row.expiresAt) {
      throw new HttpProblem(404, 'No file for this token.');
    }
    if (row.status === 'expired' || row.expiresAt <= new Date()) {
      throw new HttpProblem(410, `This file expired at ${row.expiresAt.toISOString()} and was removed.`);
    }
    // nginx keeps Content-Type, Content-Disposition and Cache-Control of this answer.
    const headers = {
      'Content-Type': servedType(row.contentType),
      'Content-Disposition': attachment(row.fileName ?? 'video'),
      'Cache-Control': 'private, no-transform',
    };
    if (deps.config.fileOffload === 'nginx') {
      // nginx would answer for a file that is gone with a 404 page of its own.
      if ((await deps.storage.size(deps.storage.filePath(row.id))) === null) throw new HttpProblem(410, 'This file is no longer stored.');
      res.set({ ...headers, 'X-Accel-Redirect': `${deps.config.fileOffloadLocation}${row.id}` }).end();
      return;
    }
    res.set({ ...headers, ETag: `"${row.sha256}"`, 'Last-Modified': row.completedAt.toUTCString() });
    try {
      const sent = await deps.storage.readStored(row.id, async (file) => {
        await sendStoredFile(req, res, file);
        return true;
      });
      if (sent === null) throw new HttpProblem(410, 'This file is no longer stored.');
    } catch (error) {
      // A problem replaces the file's answer: none of the file's headers may stay on it.
      if (!res.headersSent) clearFileHeaders(res);
      throw error;
    }
  });

  return router;
}

/** Always with an RFC 6266 `filename*`, which the library adds only for names that need it. */
function attachment(fileName: string): string {
  const header = create(fileName, { type: 'attachment' });
  return header.includes('filename*=') ? header : `${header}; filename*=${encodeExtended(fileName)}`;
}

function clearFileHeaders(res: Response): void {
  for (const name of FILE_HEADERS) res.removeHeader(name);
}

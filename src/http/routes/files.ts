import { create, encodeExtended } from 'content-disposition';
import { Router, type Response } from 'express';
import { servedType } from '../../media/containers.ts';
import { TokenLookup } from '../../downloads/read.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { LocalStorage } from '../../storage/local.ts';
import { HttpProblem } from '../problem.ts';

const FILE_HEADERS = ['Content-Type', 'Content-Disposition', 'ETag', 'Last-Modified', 'Cache-Control'];

/**
 * GET and HEAD /download/{token}: the file straight from storage in constant memory. `send`
 * (under res.sendFile) does ranges, HEAD and the conditional requests, against the ETag and
 * Last-Modified set here.
 */
export function fileRoutes(deps: { downloads: DownloadRepository; storage: LocalStorage }): Router {
  const router = Router();
  const tokens = new TokenLookup(deps.downloads);

  router.get('/download/:token', async (req, res, next) => {
    const row = await tokens.find(req.params.token);
    if (!row || !['completed', 'expired'].includes(row.status) || !row.completedAt || !row.expiresAt) {
      throw new HttpProblem(404, 'No file for this token.');
    }
    if (row.status === 'expired' || row.expiresAt <= new Date()) {
      throw new HttpProblem(410, `This file expired at ${row.expiresAt.toISOString()} and was removed.`);
    }
    res.set({
      'Content-Type': servedType(row.contentType),
      'Content-Disposition': attachment(row.fileName ?? 'video'),
      ETag: `"${row.sha256}"`,
      'Last-Modified': row.completedAt.toUTCString(),
      'Cache-Control': 'private, no-transform',
    });
    // `send` answers a conditional request in full when it says `no-cache`, which every fetch()
    // client adds to one; RFC 9110 has the origin evaluate If-None-Match regardless.
    delete req.headers['cache-control'];
    delete req.headers.pragma;
    const options = { etag: false, lastModified: false, acceptRanges: true, cacheControl: false, dotfiles: 'allow' as const };
    res.sendFile(deps.storage.filePath(row.id), options, (error?: Error & { status?: number; code?: string; headers?: Record<string, string> }) => {
      if (!error || res.headersSent) return;
      clearFileHeaders(res);
      if (error.status === 416) {
        next(new HttpProblem(416, `The range cannot be satisfied; the file has ${row.sizeBytes} bytes.`, error.headers ?? {}));
      } else if (error.code === 'ENOENT') {
        next(new HttpProblem(410, 'This file is no longer stored.'));
      } else {
        next(error);
      }
    });
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

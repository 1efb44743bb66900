import { create, encodeExtended } from 'content-disposition';
import { Router, type Response } from 'express';
import { servedType } from '../../media/containers.ts';
import { TokenLookup } from '../../downloads/read.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { Config } from '../../config/index.ts';
import { StoredFileGone, type Storage } from '../../storage/index.ts';
import { HttpProblem } from '../problem.ts';
import { sendStoredFile } from '../send-file.ts';

const FILE_HEADERS = ['Content-Type', 'Content-Disposition', 'ETag', 'Last-Modified', 'Cache-Control', 'Content-Length', 'Content-Range', 'Accept-Ranges'];

/**
 * GET and HEAD /download/{token}: the file straight from storage in constant memory, with ranges,
 * HEAD and the conditional requests against the ETag and Last-Modified set here. The service may
 * instead only decide whether the token may have the file and leave the bytes to another: with
 * FILE_OFFLOAD=nginx the nginx in front (sendfile, ranges and conditional requests against its own
 * validators, from the file's time and size), with S3_RETRIEVAL=redirect the bucket (a 302 to a
 * presigned GET).
 */
export function fileRoutes(deps: { downloads: DownloadRepository; storage: Storage; config: Config }): Router {
  const { files } = deps.storage;
  const { storage } = deps.config;
  const presignSeconds = storage.kind === 's3' && storage.retrieval === 'redirect' ? storage.presignSeconds : null;
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
    if (deps.config.fileOffload === 'nginx' || presignSeconds !== null) {
      // nginx and the bucket would answer for a file that is gone with an error page of their own.
      if (!(await files.has(row.id))) throw new HttpProblem(410, 'This file is no longer stored.');
    }
    if (deps.config.fileOffload === 'nginx') {
      res.set({ ...headers, 'X-Accel-Redirect': `${deps.config.fileOffloadLocation}${row.id}` }).end();
      return;
    }
    // The link dies with the token, or sooner: a presigned URL cannot be taken back.
    const location =
      presignSeconds === null
        ? null
        : await files.presign(row.id, {
            contentType: headers['Content-Type'],
            contentDisposition: headers['Content-Disposition'],
            expiresAt: new Date(Math.min(row.expiresAt.getTime(), Date.now() + presignSeconds * 1000)),
          });
    if (location) {
      res.status(302).set({ Location: location, 'Cache-Control': 'private, no-store' }).end();
      return;
    }
    res.set({ ...headers, ETag: `"${row.sha256}"`, 'Last-Modified': row.completedAt.toUTCString() });
    try {
      const sent = await files.read(row.id, async (file) => {
        await sendStoredFile(req, res, file);
        return true;
      });
      if (sent === null) throw new HttpProblem(410, 'This file is no longer stored.');
    } catch (error) {
      // A problem replaces the file's answer: none of the file's headers may stay on it.
      if (!res.headersSent) clearFileHeaders(res);
      throw error instanceof StoredFileGone ? new HttpProblem(410, 'This file is no longer stored.') : error;
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

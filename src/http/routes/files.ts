import type { IncomingMessage, ServerResponse } from 'node:http';
import { create, encodeExtended } from 'content-disposition';
import { Router } from 'express';
import { servedType } from '../../media/containers.ts';
import { TokenLookup } from '../../downloads/read.ts';
import type { DownloadRepository } from '../../downloads/repository.ts';
import type { Config } from '../../config/index.ts';
import { databaseAnswer } from '../../db/deadline.ts';
import { StoredFileGone, type Storage } from '../../storage/index.ts';
import { HttpProblem } from '../problem.ts';
import { sendStoredFile } from '../send-file.ts';

const FILE_HEADERS = ['Content-Type', 'Content-Disposition', 'ETag', 'Last-Modified', 'Cache-Control', 'Content-Length', 'Content-Range', 'Accept-Ranges'];

/** Answers GET or HEAD /download/{token} for `token`; throws an HttpProblem (or what failed) before any byte of the answer is written. */
export type ServeFile = (token: string, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * GET and HEAD /download/{token}: the file straight from storage in constant memory, with ranges,
 * HEAD and the conditional requests against the ETag and Last-Modified set here. The service may
 * instead only decide whether the token may have the file and leave the bytes to another: with
 * FILE_OFFLOAD=nginx the nginx in front (sendfile, ranges and conditional requests against its own
 * validators, from the file's time and size), with S3_RETRIEVAL=redirect the bucket (a 302 to a
 * presigned GET). Written against Node's request and response, not Express's, because the file
 * shortcut (file-shortcut.ts) serves most of these requests before Express sees them.
 */
export function fileServer(deps: { downloads: DownloadRepository; storage: Storage; config: Config }): ServeFile {
  const { files } = deps.storage;
  const tokens = new TokenLookup(deps.downloads);

  return async (token, req, res) => {
    // A stalled database is a 503 within seconds, not a player left waiting for ever; a link
    // fetched shortly before is answered from what TokenLookup keeps, without the database.
    const row = await databaseAnswer(tokens.find(token));
    if (!row || !['completed', 'expired'].includes(row.status) || !row.completedAt || !row.expiresAt) {
      throw new HttpProblem(404, 'No file for this token.');
    }
    if (row.status === 'expired' || row.expiresAt <= new Date()) {
      throw new HttpProblem(410, `This file expired at ${row.expiresAt.toISOString()} and was removed.`);
    }
    // The file is gone for good: the download is expired from now on, for its GET and the list too.
    const lost = async () => {
      tokens.forget(row.id);
      await databaseAnswer(deps.downloads.expireLost([row.id]));
      return new HttpProblem(410, 'This file is no longer stored.');
    };
    const type = servedType(row.contentType);
    const disposition = attachment(row.fileName ?? 'video');
    if (deps.config.fileOffload === 'nginx' || files.redirects) {
      // nginx and the bucket would answer for a file that is gone with an error page of their own.
      if (!(await files.has(row.id))) throw await lost();
    }
    // nginx keeps Content-Type, Content-Disposition and Cache-Control of this answer.
    const setFileHeaders = () => {
      res.setHeader('Content-Type', type);
      res.setHeader('Content-Disposition', disposition);
      res.setHeader('Cache-Control', 'private, no-transform');
    };
    if (deps.config.fileOffload === 'nginx') {
      setFileHeaders();
      res.setHeader('X-Accel-Redirect', `${deps.config.fileOffloadLocation}${row.id}`);
      res.end();
      return;
    }
    const location = await files.presign(row.id, { contentType: type, contentDisposition: disposition, expiresAt: row.expiresAt });
    if (location) {
      res.statusCode = 302;
      res.setHeader('Location', location);
      res.setHeader('Cache-Control', 'private, no-store');
      res.end();
      return;
    }
    setFileHeaders();
    res.setHeader('ETag', `"${row.sha256}"`);
    res.setHeader('Last-Modified', row.completedAt.toUTCString());
    try {
      const sent = await files.read(row.id, async (file) => {
        await sendStoredFile(req, res, file);
        return true;
      });
      if (sent === null) throw new StoredFileGone(row.id);
    } catch (error) {
      // A problem replaces the file's answer: none of the file's headers may stay on it.
      if (!res.headersSent) clearFileHeaders(res);
      throw error instanceof StoredFileGone ? await lost() : error;
    }
  };
}

/** The file link as an Express route, for the requests the file shortcut leaves to the validator (a query, an odd path). */
export function fileRoutes(serve: ServeFile): Router {
  const router = Router();
  router.get('/download/:token', (req, res) => serve(req.params.token, req, res));
  return router;
}

/** Always with an RFC 6266 `filename*`, which the library adds only for names that need it. */
function attachment(fileName: string): string {
  const header = create(fileName, { type: 'attachment' });
  return header.includes('filename*=') ? header : `${header}; filename*=${encodeExtended(fileName)}`;
}

function clearFileHeaders(res: ServerResponse): void {
  for (const name of FILE_HEADERS) res.removeHeader(name);
}

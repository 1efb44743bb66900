import { parentPort } from 'node:worker_threads';
import { DownloadError } from '../../core/errors.ts';
import { planDash } from '../dash/index.ts';
import { readHlsPlaylist } from '../hls/read-playlist.ts';
import { findMediaInPage } from '../html/page-media.ts';
import { DOCUMENT_NAMES, type DocumentReply, type DocumentRequest } from './requests.ts';

// The document reader's thread: it reads one playlist, manifest or page at a time and answers
// with plain data. Whatever a document does to it (eats its heap, recurses, runs long) stays here.

function read(request: DocumentRequest): unknown {
  switch (request.kind) {
    case 'hls':
      return readHlsPlaylist(request.input);
    case 'dash':
      return planDash(request.input);
    case 'page':
      return findMediaInPage(request.input);
  }
}

function answer(request: DocumentRequest): DocumentReply {
  try {
    return { ok: true, value: read(request) };
  } catch (error) {
    if (error instanceof DownloadError) return { ok: false, error: { code: error.code, message: error.message, retryable: error.retryable } };
    // A parser's own failure (a stack overflow on deep nesting, say): the document is at fault.
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, error: { code: 'unsupported_source', message: `The ${DOCUMENT_NAMES[request.kind]} could not be read (${reason}).`, retryable: false } };
  }
}

parentPort?.on('message', (request: DocumentRequest) => parentPort?.postMessage(answer(request)));

import { parentPort } from 'node:worker_threads';
import { DownloadError } from '../../core/errors.ts';
import { planDash } from '../dash/index.ts';
import { readHlsPlaylist } from '../hls/read-playlist.ts';
import { findMediaInPage } from '../html/page-media.ts';
import { listPage } from '../listing/page.ts';
import { ttmlToCues } from '../ttml/to-webvtt.ts';
import { unreadable } from '../document-kinds.ts';
import type { DocumentReply, DocumentRequest } from './requests.ts';

// The sandbox's thread: it reads one playlist, manifest or page at a time and answers
// with plain data. Whatever a document does to it (eats its heap, recurses, runs long) stays here.

function read(request: DocumentRequest): unknown {
  switch (request.kind) {
    case 'hls':
      return readHlsPlaylist(asText(request.input));
    case 'dash':
      return planDash(asText(request.input));
    case 'page': {
      const { pageUrl, listLimit } = request.input;
      const html = decoded(request.input.bytes);
      return listLimit === undefined ? findMediaInPage({ html, pageUrl }) : listPage(html, pageUrl, listLimit);
    }
    case 'ttml':
      return ttmlToCues(request.input.xml);
  }
}

function decoded(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

function asText<Rest extends object>({ bytes, ...rest }: Rest & { bytes: Uint8Array }): Omit<Rest, 'bytes'> & { text: string } {
  return { ...rest, text: decoded(bytes) };
}

function answer(request: DocumentRequest): DocumentReply {
  try {
    return { ok: true, value: read(request) };
  } catch (error) {
    const failure = error instanceof DownloadError ? error : unreadable(request.kind, error);
    return { ok: false, error: { code: failure.code, message: failure.message, retryable: failure.retryable } };
  }
}

// Parsers print every complaint about a document (xmldom one line per bad entity): a hostile one
// could fill the service's log with millions. What matters comes back in the reply.
for (const method of ['debug', 'info', 'log', 'warn', 'error'] as const) console[method] = () => {};

parentPort?.on('message', (request: DocumentRequest) => parentPort?.postMessage(answer(request)));

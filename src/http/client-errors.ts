import { STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { problemJson } from './problem.ts';

// Requests that Node's HTTP parser refuses (oversized or malformed heads) never reach Express, and
// Node's own answer to them has no body. They get a problem document like every other error.

/** Node's statuses for what its parser refuses; anything else it refuses is a 400. */
const REFUSALS: Record<string, { status: number; detail: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, detail: 'The request header fields are larger than the server accepts.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, detail: 'The chunk extensions of the request body are larger than the server accepts.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request did not arrive in time.' },
};
const MALFORMED = { status: 400, detail: 'The request is not valid HTTP/1.1.' };

/**
 * Whether a response on this connection has begun: an answer written now would land inside it.
 * Node keeps the response in flight on the socket, and has no public way to ask for it.
 */
function responseStarted(socket: Duplex): boolean {
  return (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage?.headersSent === true;
}

function rawProblem(status: number, detail: string): string {
  const body = problemJson({ status, detail });
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable || responseStarted(socket)) {
      socket.destroy();
      return;
    }
    const { status, detail } = REFUSALS[error.code ?? ''] ?? MALFORMED;
    // Closed once written: the parser has given up on this connection.
    socket.end(rawProblem(status, detail), () => socket.destroy());
  });
}

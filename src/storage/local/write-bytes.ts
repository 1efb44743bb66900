import type { FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';

// The bytes of a stored file into a response (or any stream), read in 1 MiB pieces, the next one while the last
// one is on its way, into buffers that are used again once the socket has taken them. A stream
// allocates a new buffer for each read, and under a load of 1 MiB ranges the garbage collector
// spent a tenth of the service's time on them.

const READ_BYTES = 1024 * 1024;
/** Enough for the pieces in flight at once; more are allocated when needed and left to the collector. */
const SPARE_BUFFERS = 16;

const spare: Buffer[] = [];

type Piece = { buffer: Buffer; bytes: number; position: number };

/** Writes bytes `start` to `end` (inclusive) of the file, then ends the stream; stops when the client goes away. */
export async function writeBytes(res: Writable, handle: FileHandle, start: number, end: number): Promise<void> {
  let pending: Promise<Piece> | null = readPiece(handle, start, end);
  try {
    while (pending && !res.destroyed) {
      const piece: Piece = await pending;
      const after = piece.position + piece.bytes;
      pending = after <= end ? readPiece(handle, after, end) : null;
      // Only a write that went through has let go of its buffer; a failed one may not have.
      const flowing = res.write(piece.buffer.subarray(0, piece.bytes), (error) => {
        if (!error) keep(piece.buffer);
      });
      // A response whose client has gone emits no more events: there is nothing to wait for.
      if (!flowing && !res.destroyed) await drainedOrClosed(res);
    }
  } finally {
    // A read still under way when the client went: its buffer serves another response.
    void pending?.then(
      (piece) => keep(piece.buffer),
      () => {},
    );
  }
  if (!res.destroyed) res.end();
}

async function readPiece(handle: FileHandle, position: number, end: number): Promise<Piece> {
  const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(READ_BYTES);
  const { bytesRead } = await handle.read(buffer, 0, Math.min(READ_BYTES, end - position + 1), position);
  if (bytesRead === 0) throw new Error(`The stored file ended at ${position} bytes, before the ${end + 1} it had.`);
  return { buffer, bytes: bytesRead, position };
}

function keep(buffer: Buffer): void {
  if (spare.length < SPARE_BUFFERS) spare.push(buffer);
}

function drainedOrClosed(res: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

import { Readable } from 'node:stream';

/**
 * The first `bytes` of a body (fewer if it is shorter), and the whole body still to be read:
 * enough to tell what a response is without asking for it twice.
 */
export async function peek(body: Readable, bytes: number): Promise<{ head: Buffer; whole: Readable }> {
  const iterator = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let size = 0;
  let ended = false;
  while (size < bytes) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    chunks.push(next.value);
    size += next.value.length;
  }
  const head = Buffer.concat(chunks);
  const whole = Readable.from(
    (async function* () {
      try {
        if (head.length > 0) yield head;
        while (!ended) {
          const next = await iterator.next();
          if (next.done) return;
          yield next.value;
        }
      } finally {
        // Let go of the connection when the reader stops early.
        await iterator.return?.();
      }
    })(),
    { objectMode: false },
  );
  // A body thrown away before its first read never starts the generator, whose `finally` would
  // otherwise be what lets go of the connection.
  whole.once('close', () => void iterator.return?.());
  return { head: head.subarray(0, bytes), whole };
}

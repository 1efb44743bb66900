import { Readable } from 'node:stream';
import { cameInOwnBuffers } from '../core/collect-buffers.ts';

// Node's HTTP client throws away what a response holds unread when its connection fails: a source
// that resets right after its last byte, while the service is still deciding what the body is,
// loses the bytes that had arrived, and a retry must ask for them again. So a body is taken as it
// comes, up to a bound, and its failure reaches the reader only after every byte before it. Each
// chunk is a buffer of Node's own, which V8 is told of (core/collect-buffers.ts).

/** How far a body is read ahead of its reader; beyond it, the source waits (and is not held to its idle timeout). */
const READ_AHEAD_BYTES = 1024 * 1024;

/** How often a failure that waits behind bytes a reader has not taken yet looks again. */
const FAILURE_WAIT_MS = 10;

export function heldBody(source: Readable): Readable {
  const queue: Buffer[] = [];
  let queued = 0;
  let wanted = false;
  let ended = false;
  let failure: Error | null = null;
  let failing = false;

  const body = new Readable({
    // Everything waits in the queue above, so that the source's pace is set by one bound.
    highWaterMark: 1,
    read() {
      wanted = true;
      pass();
    },
    destroy(error, callback) {
      source.destroy();
      callback(error);
    },
  });

  const pass = () => {
    while (wanted && queue.length > 0) {
      const chunk = queue.shift()!;
      queued -= chunk.length;
      wanted = body.push(chunk);
    }
    if (queued < READ_AHEAD_BYTES && source.isPaused() && !ended) source.resume();
    if (queue.length > 0 || !wanted) return;
    if (ended) body.push(null);
    else if (failure && !failing) failLater(failure);
  };

  // The chunk being read is still in the body's buffer while it asks for more: the failure waits
  // until the reader has it.
  const failLater = (error: Error) => {
    failing = true;
    const fail = () => (body.readableLength === 0 || body.destroyed ? body.destroy(error) : setTimeout(fail, FAILURE_WAIT_MS));
    process.nextTick(fail);
  };

  source.on('data', (chunk: Buffer) => {
    cameInOwnBuffers(chunk.length);
    queue.push(chunk);
    queued += chunk.length;
    if (queued >= READ_AHEAD_BYTES) source.pause();
    pass();
  });
  source.on('end', () => {
    ended = true;
    pass();
  });
  source.on('error', (error) => {
    failure ??= error;
    pass();
  });
  source.on('close', () => {
    if (ended || failure) return;
    failure = prematureClose();
    pass();
  });
  // A source may fail before it is handed over: an answer whose body is not valid HTTP in the same
  // read as its head fails at once, and its events have all been heard by nobody. Left unsaid, the
  // reader would wait for ever, a cancel and a shutdown with it.
  if (source.destroyed && !ended) failure = source.errored ?? prematureClose();
  return body;
}

function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

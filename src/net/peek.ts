import { Readable } from 'node:stream';
import type { SpeedFloor } from './speed-floor.ts';

/**
 * The first `bytes` of a body (fewer if it is shorter), and the body still whole: the bytes read
 * are put back in front of it, so that what a response is can be told without asking for it
 * twice, and without a stream in between that every later byte would have to cross. The bytes are
 * held to `floor`: a source must not take hours over its first KiB.
 */
export function peek(body: Readable, bytes: number, floor: SpeedFloor): Promise<{ head: Buffer; body: Readable }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => body.off('data', onData).off('end', onEnd).off('error', onError);
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size < bytes) {
        try {
          floor.arrived(chunk.length);
        } catch (error) {
          stop();
          // Let go of the body; the error its destruction emits is not news to anyone.
          body.on('error', () => {}).destroy();
          reject(error instanceof Error ? error : new Error(String(error)));
        }
        return;
      }
      stop();
      body.pause();
      const head = Buffer.concat(chunks);
      body.unshift(head);
      resolve({ head: head.subarray(0, bytes), body });
    };
    // A body shorter than `bytes` has ended: what was read is all of it.
    const onEnd = () => {
      stop();
      const whole = Buffer.concat(chunks);
      resolve({ head: whole, body: Readable.from(whole.length > 0 ? [whole] : []) });
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    body.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

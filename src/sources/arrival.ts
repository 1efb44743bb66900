import { requireStatus } from '../net/guarded-client.ts';
import { peek } from '../net/peek.ts';
import { detectKind } from './detect.ts';
import type { Arrival, MediaContext } from './reader.ts';

const HEAD_BYTES = 1024;

/**
 * Asks for `url` and reads the first KiB of the answer to tell what it is; the body is kept whole
 * for the reader that takes it. An answer that is not a success is the contract's error.
 */
export async function arrive(ctx: Pick<MediaContext, 'http' | 'signal'>, url: string): Promise<Arrival> {
  const response = requireStatus(await ctx.http.get(url, { signal: ctx.signal }));
  const { head, body } = await peek(response.body, HEAD_BYTES, response.floor);
  const detected = await detectKind({ url: response.url, contentType: response.headers['content-type'] ?? null, head });
  return { url, response: { ...response, body }, detected, head };
}

import type { components } from '../../generated/api.ts';

/** `best` (default), `worst`, or the largest acceptable picture height. */
export type Quality = components['schemas']['Quality'];

/** A quality as the database stores it (text) back to its API form. */
export function parseQuality(stored: string): Quality {
  return stored === 'best' || stored === 'worst' ? stored : Number(stored);
}

import { parse } from 'content-disposition';

/**
 * The name a source gives its file in Content-Disposition (RFC 6266, `filename*` before
 * `filename`), without its extension, which the container decides; null when there is none or
 * the header does not parse. It is the source's word: the file name is cleaned where it is made.
 */
export function dispositionName(header: string | undefined): string | null {
  if (!header) return null;
  let name: string | undefined;
  try {
    name = parse(header).parameters.filename;
  } catch {
    return null;
  }
  const base = name?.replace(/\.[A-Za-z0-9]{1,5}$/, '').trim();
  return base ? base : null;
}

// Just enough of RFC 9110 ranges and validators for a source that tests can resume against.

export type ByteRange = { start: number; end: number };

/** `undefined` means serve the whole body; `'unsatisfiable'` means 416. */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | undefined {
  // Multiple ranges are legal to ignore (RFC 9110 14.2), and no test needs multipart answers.
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

export function sameSecond(a: Date, b: Date): boolean {
  return Math.floor(a.getTime() / 1000) === Math.floor(b.getTime() / 1000);
}

export function etagList(header: string): string[] {
  return header.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
}

// The parts of a file that are kept, as sorted, disjoint, non-adjacent spans [start, end): pieces
// of a direct file arrive over several connections in any order, and a later attempt fetches only
// what lies between them.

export type Span = { start: number; end: number };

/** `spans` with [start, end) added, merged with whatever it touches. */
export function addSpan(spans: readonly Span[], start: number, end: number): Span[] {
  if (end <= start) return [...spans];
  const merged: Span[] = [];
  let added = { start, end };
  for (const span of spans) {
    if (span.end < added.start || span.start > added.end) merged.push(span);
    else added = { start: Math.min(span.start, added.start), end: Math.max(span.end, added.end) };
  }
  merged.push(added);
  return merged.sort((a, b) => a.start - b.start);
}

/** How many bytes the spans hold. */
export function spanBytes(spans: readonly Span[]): number {
  return spans.reduce((sum, span) => sum + span.end - span.start, 0);
}

/** Where the kept bytes at the file's start end: 0 when its first byte is not kept. */
export function frontOf(spans: readonly Span[]): number {
  return spans[0]?.start === 0 ? spans[0].end : 0;
}

/** The spans of [0, total) that are not kept, in order. */
export function gapsOf(spans: readonly Span[], total: number): Span[] {
  const gaps: Span[] = [];
  let at = 0;
  for (const span of spans) {
    if (span.start >= total) break;
    if (span.start > at) gaps.push({ start: at, end: span.start });
    at = Math.max(at, span.end);
  }
  if (at < total) gaps.push({ start: at, end: total });
  return gaps;
}

/** Spans read back from a record: well-formed ones only, clipped to `size` bytes, merged. */
export function spansFrom(value: unknown, size: number): Span[] {
  if (!Array.isArray(value)) return [];
  let spans: Span[] = [];
  for (const item of value as unknown[]) {
    const { start, end } = (item ?? {}) as Partial<Span>;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start! < 0) continue;
    spans = addSpan(spans, start!, Math.min(end!, size));
  }
  return spans;
}

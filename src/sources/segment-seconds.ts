// A segment's duration is the manifest's word, and a hostile manifest can say anything: a
// duration is kept only when it is one a real segment could have, else the segment's is unknown
// (and a clip of its track is cut after a whole fetch instead).

/** A day: far above any real segment, a SegmentBase's single whole file included. */
const MAX_SEGMENT_SECONDS = 86_400;

/** The duration a manifest gives a segment, or undefined when it is not a positive number of seconds up to a day (NaN, negative, absurd). */
export function segmentSeconds(value: unknown): number | undefined {
  return typeof value === 'number' && value > 0 && value <= MAX_SEGMENT_SECONDS ? value : undefined;
}

// A feed item's duration as podcasts write it (`<itunes:duration>`, Media RSS's `duration`):
// seconds (`1830`, `1830.5`), `MM:SS` or `HH:MM:SS`. Anything else is no duration.

const SECONDS = /^\d{1,9}(?:\.\d{1,6})?$/;
const CLOCK = /^(?:(\d{1,6}):)?(\d{1,2}):(\d{1,2})$/;

/** The duration in seconds that `text` states, or null. */
export function durationOf(text: string | null): number | null {
  const written = text?.trim() ?? '';
  if (SECONDS.test(written)) return Number(written);
  const clock = CLOCK.exec(written);
  if (!clock) return null;
  const [hours, minutes, seconds] = [Number(clock[1] ?? 0), Number(clock[2]), Number(clock[3])];
  if (seconds > 59 || (clock[1] !== undefined && minutes > 59)) return null;
  return hours * 3600 + minutes * 60 + seconds;
}

// TTML time expressions (TTML2 §10.3.1), in seconds on the document's media timeline.
//
// ttp:timeBase is read as "media" whatever it says: "smpte" counts frames the same way (drop-frame
// numbering, ttp:dropMode, is not undone) and "clock" time has no meaning for a downloaded file.

export type TimeRates = {
  /** Frames a second: ttp:frameRate times ttp:frameRateMultiplier (30 when not given). */
  frameRate: number;
  /** Sub-frames a frame: ttp:subFrameRate (1 when not given). */
  subFrameRate: number;
  /** Ticks a second: ttp:tickRate, else the frame rate times the sub-frame rate when a frame rate is given, else 1. */
  tickRate: number;
};

export type TimeParameters = { frameRate?: string; frameRateMultiplier?: string; subFrameRate?: string; tickRate?: string };

/** A positive integer, or undefined for one absent or malformed. */
function positive(value: string | undefined): number | undefined {
  const trimmed = value?.trim() ?? '';
  if (!/^\d{1,9}$/.test(trimmed)) return undefined;
  const number = Number(trimmed);
  return number > 0 ? number : undefined;
}

/** The rates the `ttp:` parameters on the `tt` element give, with TTML's defaults for the ones they leave out. */
export function timeRates(parameters: TimeParameters): TimeRates {
  const baseRate = positive(parameters.frameRate);
  const [numerator, denominator] = (parameters.frameRateMultiplier ?? '').trim().split(/[ \t\n\r]+/);
  const multiplier = (positive(numerator) ?? 1) / (positive(denominator) ?? 1);
  const frameRate = (baseRate ?? 30) * multiplier;
  const subFrameRate = positive(parameters.subFrameRate) ?? 1;
  const tickRate = positive(parameters.tickRate) ?? (baseRate === undefined ? 1 : frameRate * subFrameRate);
  return { frameRate, subFrameRate, tickRate };
}

// Anchored, with no nested quantifiers: linear in the length of the value (which is capped anyway).
// Hours and frames take any number of digits, though TTML asks for at least two.
const CLOCK_TIME = /^(\d+):(\d{2}):(\d{2})(?:(\.\d+)|:(\d+)(?:\.(\d+))?)?$/;
const OFFSET_TIME = /^(\d+(?:\.\d+)?)(h|ms|m|s|f|t)$/;
const UNITS: Record<string, (count: number, rates: TimeRates) => number> = {
  h: (count) => count * 3600,
  m: (count) => count * 60,
  s: (count) => count,
  ms: (count) => count / 1000,
  f: (count, rates) => count / rates.frameRate,
  t: (count, rates) => count / rates.tickRate,
};

/** Seconds, or null for a missing (null or '') or malformed expression. */
export function parseTime(expression: string | null, rates: TimeRates): number | null {
  if (expression === null || expression.length > 64) return null;
  const value = expression.trim();
  const clock = CLOCK_TIME.exec(value);
  if (clock) {
    const [, hours, minutes, seconds, fraction, frames, subFrames] = clock;
    let time = Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds) + Number(fraction ?? 0);
    if (frames !== undefined) time += (Number(frames) + Number(subFrames ?? 0) / rates.subFrameRate) / rates.frameRate;
    return Number.isFinite(time) ? time : null;
  }
  const offset = OFFSET_TIME.exec(value);
  if (!offset) return null;
  const time = UNITS[offset[2]!]!(Number(offset[1]), rates);
  return Number.isFinite(time) ? time : null;
}

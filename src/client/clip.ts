import type { Clip } from './types.ts';

// A clip as a person writes it and as the clients show it: each time in seconds or as m:ss or
// h:mm:ss (a fraction of a second allowed). The CLI takes `start-end` in one argument
// (`vds get --clip 1:30-2:00`, `1:30-` to the end); the page takes a start and an end field.

const TIME = /^(?:(?:(\d+):)?([0-5]?\d):)?(\d+(?:\.\d+)?)$/;

/** Seconds of `text` (`90`, `1:30`, `1:02:03.5`); undefined for anything else, or seconds past 59 after a colon. */
export function parseTime(text: string): number | undefined {
  const match = TIME.exec(text.trim());
  if (!match) return undefined;
  const [, hours, minutes, secs] = match;
  const seconds = Number(secs);
  if (minutes !== undefined && seconds >= 60) return undefined;
  return Number(hours ?? 0) * 3600 + Number(minutes ?? 0) * 60 + seconds;
}

/** The clip `start-end` (or `start-`) says; undefined when it is not one, or when its start is not below its end. */
export function parseClip(text: string): Clip | undefined {
  const dash = text.indexOf('-');
  if (dash < 0) return undefined;
  const start = parseTime(text.slice(0, dash));
  const endText = text.slice(dash + 1).trim();
  const end = endText === '' ? null : parseTime(endText);
  if (start === undefined || end === undefined) return undefined;
  if (end !== null && start >= end) return undefined;
  return { start_seconds: start, end_seconds: end };
}

/**
 * The clip a start and an end field say, either of them empty (an empty start is the beginning,
 * an empty end the end; both empty, no clip), or why they say none, as a sentence.
 */
export function clipOfFields(startText: string, endText: string): { clip: Clip | null } | { problem: string } {
  const [start, end] = [startText.trim(), endText.trim()];
  if (start === '' && end === '') return { clip: null };
  const startSeconds = start === '' ? 0 : parseTime(start);
  if (startSeconds === undefined) return notATime(start);
  const endSeconds = end === '' ? null : parseTime(end);
  if (endSeconds === undefined) return notATime(end);
  if (endSeconds !== null && startSeconds >= endSeconds) return { problem: 'The clip must start before it ends.' };
  return { clip: { start_seconds: startSeconds, end_seconds: endSeconds } };
}

function notATime(text: string): { problem: string } {
  return { problem: `"${text}" is not a time: write seconds (90), minutes and seconds (1:30), or hours too (1:02:03).` };
}

/** Seconds as m:ss or h:mm:ss, with the fraction of a second it has (`1:30`, `1:02:03.5`). */
export function formatTime(seconds: number): string {
  const whole = Math.floor(seconds);
  const fraction = Number((seconds - whole).toFixed(3));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const secs = `${String(s).padStart(2, '0')}${fraction ? String(fraction).slice(1) : ''}`;
  return h ? `${h}:${String(m).padStart(2, '0')}:${secs}` : `${m}:${secs}`;
}

/** A clip in a few words: `from 1:30 to 2:00`, `from 1:30 to the end`. */
export function describeClip(clip: Clip): string {
  const end = clip.end_seconds === null || clip.end_seconds === undefined ? 'the end' : formatTime(clip.end_seconds);
  return `from ${formatTime(clip.start_seconds)} to ${end}`;
}

import type { CreateDownload } from '../client/index.ts';

// `vds get --clip 1:30-2:00`: a start and an optional end, each in seconds or as m:ss or h:mm:ss
// (a fraction of a second allowed); `1:30-` runs to the end of the video.

export type ClipOption = NonNullable<CreateDownload['clip']>;

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
export function parseClip(text: string): ClipOption | undefined {
  const dash = text.indexOf('-');
  if (dash < 0) return undefined;
  const start = parseTime(text.slice(0, dash));
  const endText = text.slice(dash + 1).trim();
  const end = endText === '' ? null : parseTime(endText);
  if (start === undefined || end === undefined) return undefined;
  if (end !== null && start >= end) return undefined;
  return { start_seconds: start, end_seconds: end };
}

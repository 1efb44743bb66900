// WebVTT cue times: written, and moved so that a side-loaded file follows a clip of its media.
// Moving takes every cue back by where the clip starts in the source; a cue that ends before it
// is left out and one that straddles it starts at 0, a cue that starts at or past the clip's end
// is left out. Blocks that are not cues (the header, NOTE, STYLE, REGION) and cue text stay as they were.

// `hh:mm:ss.ttt` (hours optional, of any width WebVTT allows) `-->` the same, then the cue's settings.
const TIMING = /^[ \t]*((?:\d{1,9}:)?\d{2}:\d{2}\.\d{3})[ \t]+-->[ \t]+((?:\d{1,9}:)?\d{2}:\d{2}\.\d{3})([ \t].*)?$/;

function secondsOf(stamp: string): number {
  return stamp.split(':').reduce((total, part) => total * 60 + Number(part), 0);
}

const pad = (value: number, width: number) => String(value).padStart(width, '0');

/** `hh:mm:ss.ttt` from whole milliseconds. */
export function webVttTimestamp(ms: number): string {
  return `${pad(Math.floor(ms / 3_600_000), 2)}:${pad(Math.floor(ms / 60_000) % 60, 2)}:${pad(Math.floor(ms / 1000) % 60, 2)}.${pad(ms % 1000, 3)}`;
}

/**
 * `text` with its cues moved by `-fromSeconds` (where the kept part starts in the source) and
 * bounded to the kept part, which lasts `durationSeconds` (null when unknown: no end bound).
 */
export function shiftWebVtt(text: string, fromSeconds: number, durationSeconds: number | null): string {
  const blocks = text.split(/\r\n|\r|\n/).reduce<string[][]>(
    (all, line) => {
      if (line.trim() === '') all.push([]);
      else all.at(-1)!.push(line);
      return all;
    },
    [[]],
  );
  const kept: string[] = [];
  for (const lines of blocks.filter((block) => block.length > 0)) {
    // A cue's timing is its first line, or its second after an identifier.
    const at = lines.findIndex((line, index) => index < 2 && line.includes('-->'));
    const timing = at < 0 ? null : TIMING.exec(lines[at]!);
    if (!timing) {
      kept.push(lines.join('\n'));
      continue;
    }
    const start = secondsOf(timing[1]!) - fromSeconds;
    const end = secondsOf(timing[2]!) - fromSeconds;
    if (end <= 0 || (durationSeconds !== null && start >= durationSeconds)) continue;
    const moved = `${webVttTimestamp(Math.round(Math.max(0, start) * 1000))} --> ${webVttTimestamp(Math.round(end * 1000))}${timing[3] ?? ''}`;
    kept.push([...lines.slice(0, at), moved, ...lines.slice(at + 1)].join('\n'));
  }
  return `${kept.join('\n\n')}\n`;
}

import type { ProblemError } from './problem.ts';

// How a person is told about a download: sizes, durations, and a problem as one sentence. Shared
// by every client the project ships (the CLI, the web page).

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

export function formatBytes(count: number): string {
  let value = count;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  // One decimal where it says something: 3.1 MB, but 320 KB rather than 320.0 KB.
  return `${unit === 0 ? value : Number(value.toFixed(1))} ${UNITS[unit]}`;
}

export function formatDuration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`;
}

/** A problem as one sentence: its detail, and what each bad field was told; a failed download's error. */
export function problemSentence(error: ProblemError): string {
  if (error.download?.error) return `Download ${error.download.id} failed (${error.download.error.code}): ${error.download.error.message}`;
  const fields = (error.problem.errors ?? []).map(({ field, message }) => `${field.replace(/^\/(body|query|headers|path)\//, '')} ${message}`);
  const detail = error.problem.detail.replace(/\.?$/, '.');
  return fields.length ? `${detail} ${fields.join('; ')}.` : detail;
}

import type { ProblemError } from './problem.ts';
import type { Download } from './types.ts';

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

const SOURCE_KINDS = { direct: 'a file', hls: 'an HLS stream', dash: 'a DASH stream', page: 'a web page', site: 'a site' } as const;

/** How the media was found, in a few words: `a site (Youtube)`, `a web page`, `an HLS stream`; null until known. */
export function describeSource(source: Download['source']): string | null {
  if (!source) return null;
  return source.extractor ? `${SOURCE_KINDS[source.kind]} (${source.extractor})` : SOURCE_KINDS[source.kind];
}

/** A problem as one sentence: its detail, and what each bad field was told; a failed download's error. */
export function problemSentence(error: ProblemError): string {
  if (error.download?.error) return `Download ${error.download.id} failed (${error.download.error.code}): ${error.download.error.message}`;
  const fields = (error.problem.errors ?? []).map(({ field, message }) => `${field.replace(/^\/(body|query|headers|path)\//, '')} ${message}`);
  const detail = error.problem.detail.replace(/\.?$/, '.');
  return fields.length ? `${detail} ${fields.join('; ')}.` : detail;
}

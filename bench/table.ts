// The result of a run: one row per figure, each against a reference measured in the same run.

export type Row = {
  figure: string;
  ours: string;
  reference: string;
  /** How many times the reference's performance ours reaches: above 1, ours does better. */
  ratio: number | null;
  target: string;
  /** null for figures reported without a target. */
  met: boolean | null;
};

export type Target = { text: string; met(ours: number, ratio: number): boolean } | null;

export const ratioAtLeast = (min: number, text = `≥ ${min}`): Target => ({ text, met: (_ours, ratio) => ratio >= min });
export const oursBelow = (limit: number, text: string): Target => ({ text, met: (ours) => ours < limit });
export const oursAtMost = (limit: number, text: string): Target => ({ text, met: (ours) => ours <= limit });

type Reference = { label: string; value: number };

/**
 * One figure. For a rate (`higher` is better) the ratio is ours / reference; for a time or a size
 * it is reference / ours, so that the ratio always reads "above 1, ours does better".
 */
export function row(figure: string, ours: number, reference: Reference, better: 'higher' | 'lower', format: (value: number) => string, target: Target): Row {
  const ratio = better === 'higher' ? ours / reference.value : reference.value / ours;
  return {
    figure,
    ours: format(ours),
    reference: `${reference.label}: ${format(reference.value)}`,
    ratio,
    target: target?.text ?? '—',
    met: target ? target.met(ours, ratio) : null,
  };
}

/** A growth over a baseline, such as the service's memory over the idle service: the baseline beside it, and no ratio, for a growth has none to it. */
export function growthRow(figure: string, growth: number, baseline: Reference, format: (value: number) => string, target: Target): Row {
  return {
    figure,
    ours: `${growth < 0 ? '-' : '+'}${format(Math.abs(growth))}`,
    reference: `${baseline.label}: ${format(baseline.value)}`,
    ratio: null,
    target: target?.text ?? '—',
    // A growth has no ratio to judge; its target is a bound on the growth itself.
    met: target ? target.met(growth, NaN) : null,
  };
}

export function renderTable(rows: Row[]): string {
  const cells = (values: string[]) => `| ${values.join(' | ')} |`;
  return [
    cells(['figure', 'ours', 'reference', 'ratio', 'target', 'met']),
    cells(Array<string>(6).fill('---')),
    ...rows.map((r) =>
      cells([r.figure, r.ours, r.reference, r.ratio === null ? '—' : r.ratio.toFixed(2), r.target, r.met === null ? '—' : r.met ? 'yes' : 'no']),
    ),
  ].join('\n');
}

export const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
/** To a tenth of a MB, for memory judged by a few MB. */
export const megabytesTenths = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
export const megabytesPerSecond = (bytesPerSecond: number) => `${(bytesPerSecond / 1e6).toFixed(0)} MB/s`;
export const perSecond = (count: number) => `${count.toFixed(0)}/s`;
export const milliseconds = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`);

/** Nearest-rank percentile. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) throw new Error('no values to take a percentile of');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const median = (values: number[]) => percentile(values, 50);

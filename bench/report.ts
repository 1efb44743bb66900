import os from 'node:os';
import { renderTable, type Row } from './table.ts';

// bench/results.md: the table, and what it was measured on.

export type RunFacts = { database: string; seconds: number; loadBefore: string; loadAfter: string };

/** The 1-minute load average: other work on the machine skews figures, however careful the turns. */
export const loadAverage = () => os.loadavg()[0]!.toFixed(1);

/** `notes`: what the rows need said beyond the ratio, a paragraph each. */
export function renderReport(rows: Row[], facts: RunFacts, notes: string[] = []): string {
  const when = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return [
    '# Benchmark results',
    '',
    `${when}; ${machine()}; ${facts.database}; ${facts.seconds} s; load average ${facts.loadBefore} before, ${facts.loadAfter} after.`,
    '',
    renderTable(rows),
    '',
    "ratio: how many times the reference's performance ours reaches (ours / reference for rates, reference / ours for times and sizes); above 1, ours does better. Memory growth, judged by itself, has none.",
    '',
    ...notes.flatMap((note) => [note, '']),
  ].join('\n');
}

function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(os.totalmem() / 1024 ** 3)} GB RAM, Node ${process.version}`;
}

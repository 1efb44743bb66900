import type { Bench } from './context.ts';

// Ours and the reference take turns, round after round, each after the disk has settled, and who
// goes first alternates: a load that comes and goes on the machine (other processes, writeback)
// then falls on both alike, and the median of the rounds leaves an odd one out.

export async function takeTurns<K extends string, T>(
  bench: Bench,
  rounds: number,
  contenders: Record<K, () => Promise<T>>,
  report: (latest: Record<K, T>) => string,
): Promise<Record<K, T[]>> {
  const names = Object.keys(contenders) as K[];
  const results = Object.fromEntries(names.map((name) => [name, [] as T[]])) as Record<K, T[]>;
  for (let round = 1; round <= rounds; round++) {
    for (const name of round % 2 === 1 ? names : [...names].reverse()) {
      await bench.settle();
      results[name].push(await contenders[name]());
    }
    const latest = Object.fromEntries(names.map((name) => [name, results[name].at(-1)!])) as Record<K, T>;
    bench.progress(`  round ${round}/${rounds}: ${report(latest)}`);
  }
  return results;
}

/** A round's progress line: every contender's latest figure. */
export const eachLatest = (format: (value: number) => string) => (latest: Record<string, number>) =>
  Object.entries(latest)
    .map(([name, value]) => `${name} ${format(value)}`)
    .join(', ');

import { microsToUsd } from '../../domain/money';

/** How the console writes money, times and rates: the same on every page. */

export const usd = (micros: bigint | number): string => `$${microsToUsd(BigInt(micros)).toFixed(Number(micros) === 0 ? 2 : 4)}`;

export const when = (d: Date): string => d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

export const percent = (rate: number): string => `${(rate * 100).toFixed(1)}%`;

/** Win rates and interval bounds, to the precision their intervals can carry. */
export const rate = (x: number): string => x.toFixed(3);

/** "1 round", "2 rounds". */
export const count = (n: number, noun: string): string => `${n} ${n === 1 ? noun : `${noun}s`}`;

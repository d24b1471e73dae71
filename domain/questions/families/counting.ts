import { listed, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty per template: group sizes and whether a pair refuses to serve together; word shapes; range and divisor rules. */
const PARAMS: Readonly<
  Record<
    Bucket,
    { n: [number, number]; k: [number, number]; feud: boolean; words: readonly string[]; limit: number; divisors: number; exclude: boolean }
  >
> = {
  light: {
    n: [4, 7],
    k: [2, 3],
    feud: false,
    words: ['cat', 'lamp', 'bird', 'stone', 'plant', 'house', 'frog'],
    limit: 100,
    divisors: 1,
    exclude: false,
  },
  medium: {
    n: [8, 14],
    k: [3, 5],
    feud: false,
    words: ['level', 'apple', 'letter', 'kettle', 'coffee', 'pepper', 'rabbit'],
    limit: 1000,
    divisors: 2,
    exclude: false,
  },
  hard: {
    n: [10, 18],
    k: [3, 6],
    feud: true,
    words: ['banana', 'balloon', 'committee', 'mississippi', 'statistics', 'bookkeeper', 'tennessee', 'assessment'],
    limit: 10_000,
    divisors: 2,
    exclude: true,
  },
};

export function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  // Each partial product is itself a binomial coefficient, so the division is exact.
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

export interface CommitteeSpec {
  n: number;
  k: number;
  /** Two named people refuse to serve together. */
  feud: boolean;
}

export function committeeQuestion({ n, k, feud }: CommitteeSpec): Drawn {
  const rule = feud ? ' Two of the people, Pat and Sam, refuse to serve on the committee together.' : '';
  return {
    question: `A club of ${n} people chooses a committee of ${k} (the order does not matter).${rule} How many different committees are possible? Answer with the number only.`,
    answer: String(choose(n, k) - (feud ? choose(n - 2, k - 2) : 0)),
  };
}

function factorial(n: number): number {
  return n <= 1 ? 1 : n * factorial(n - 1);
}

export function arrangementsQuestion(word: string): Drawn {
  const counts = new Map<string, number>();
  for (const ch of word) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  const total = [...counts.values()].reduce((r, c) => r / factorial(c), factorial(word.length));
  return {
    question: `How many distinct arrangements of all the letters of the word ${word.toUpperCase()} are there, counting the word itself? Answer with the number only.`,
    answer: String(total),
  };
}

export interface DivisibleSpec {
  limit: number;
  divisors: readonly number[];
  /** Numbers divisible by this one are not counted. */
  exclude?: number;
}

export function divisibleQuestion({ limit, divisors, exclude }: DivisibleSpec): Drawn {
  let count = 0;
  for (let i = 1; i <= limit; i++) if (divisors.some((d) => i % d === 0) && (exclude === undefined || i % exclude !== 0)) count++;
  const by = listed(divisors.map(String)).replace(/ and /, ' or ');
  const but = exclude === undefined ? '' : ` but not by ${exclude}`;
  return {
    question: `How many whole numbers from 1 to ${limit} inclusive are divisible by ${by}${but}? Answer with the number only.`,
    answer: String(count),
  };
}

function drawDivisible(rng: Rng, bucket: Bucket): DivisibleSpec {
  const p = PARAMS[bucket];
  const limit = rng.int(p.limit / 2, p.limit);
  const divisors = rng.sample([2, 3, 4, 5, 6, 7, 9, 11, 13], p.divisors).sort((a, b) => a - b);
  const exclude = p.exclude ? rng.pick([2, 3, 5, 7, 10].filter((e) => !divisors.includes(e))) : undefined;
  return { limit, divisors, exclude };
}

export const counting: Family = {
  name: 'counting',
  templates: [
    {
      name: 'committee',
      make: (rng, bucket) => {
        const p = PARAMS[bucket];
        const n = rng.int(p.n[0], p.n[1]);
        return committeeQuestion({ n, k: rng.int(p.k[0], Math.min(p.k[1], n - 1)), feud: p.feud });
      },
    },
    { name: 'arrangements', make: (rng, bucket) => arrangementsQuestion(rng.pick(PARAMS[bucket].words)) },
    { name: 'divisible', make: (rng, bucket) => divisibleQuestion(drawDivisible(rng, bucket)) },
  ],
};

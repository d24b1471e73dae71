import { listed, plural, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: how many rungs of a unit ladder a conversion crosses, how large the amount is, how many parts a mixed amount has. */
const PARAMS: Readonly<Record<Bucket, { steps: number; maxValue: number; parts: number }>> = {
  light: { steps: 1, maxValue: 12, parts: 2 },
  medium: { steps: 2, maxValue: 60, parts: 3 },
  hard: { steps: 3, maxValue: 500, parts: 4 },
};

export interface Unit {
  singular: string;
  plural: string;
}
const u = (singular: string, pluralForm = `${singular}s`): Unit => ({ singular, plural: pluralForm });

/** Units from largest to smallest; `factors[i]` of unit i+1 make one unit i. Exact factors only, so answers are whole. */
export interface Ladder {
  units: readonly Unit[];
  factors: readonly number[];
}

export const LADDERS: readonly Ladder[] = [
  { units: [u('week'), u('day'), u('hour'), u('minute'), u('second')], factors: [7, 24, 60, 60] },
  { units: [u('kilometre'), u('metre'), u('centimetre'), u('millimetre')], factors: [1000, 100, 10] },
  { units: [u('mile'), u('yard'), u('foot', 'feet'), u('inch', 'inches')], factors: [1760, 3, 12] },
  { units: [u('tonne'), u('kilogram'), u('gram'), u('milligram')], factors: [1000, 1000, 1000] },
  { units: [u('US gallon'), u('US quart'), u('US pint'), u('US cup')], factors: [4, 2, 2] },
  { units: [u('kilolitre'), u('litre'), u('millilitre')], factors: [1000, 1000] },
];

const amount = (n: number, unit: Unit): string => plural(n, unit.singular, unit.plural);

/** How many of unit `to` make one of unit `from` (from above to in the ladder). */
function factor(ladder: Ladder, from: number, to: number): number {
  return ladder.factors.slice(from, to).reduce((a, b) => a * b, 1);
}

export interface ScaleSpec {
  ladder: Ladder;
  /** Ladder indices: larger unit `from`, smaller unit `to`. */
  from: number;
  to: number;
  /** The amount in the larger unit. */
  value: number;
}

/** Larger to smaller: multiply. */
export function scaleDown({ ladder, from, to, value }: ScaleSpec): Drawn {
  return {
    question: `How many ${ladder.units[to].plural} are there in ${amount(value, ladder.units[from])}? Answer with the number only.`,
    answer: String(value * factor(ladder, from, to)),
  };
}

/** Smaller to larger: the amount is chosen so the answer is whole. */
export function scaleUp({ ladder, from, to, value }: ScaleSpec): Drawn {
  return {
    question: `Convert ${amount(value * factor(ladder, from, to), ladder.units[to])} to ${ladder.units[from].plural}. Answer with the number only.`,
    answer: String(value),
  };
}

function drawScale(rng: Rng, bucket: Bucket): ScaleSpec {
  const p = PARAMS[bucket];
  const ladder = rng.pick(LADDERS.filter((l) => l.units.length > p.steps));
  const from = rng.int(0, ladder.units.length - 1 - p.steps);
  return { ladder, from, to: from + p.steps, value: rng.int(2, p.maxValue) };
}

export interface MixedSpec {
  ladder: Ladder;
  /** Index of the first (largest) part. */
  first: number;
  /** One amount per consecutive unit from `first`. */
  values: readonly number[];
}

/** `2 hours, 15 minutes and 40 seconds` in the smallest unit named. */
export function mixedAmount({ ladder, first, values }: MixedSpec): Drawn {
  const last = first + values.length - 1;
  const total = values.reduce((sum, v, i) => sum + v * factor(ladder, first + i, last), 0);
  const parts = values.map((v, i) => amount(v, ladder.units[first + i]));
  return {
    question: `How many ${ladder.units[last].plural} are there in ${listed(parts)} altogether? Answer with the number only.`,
    answer: String(total),
  };
}

function drawMixed(rng: Rng, bucket: Bucket): MixedSpec {
  const p = PARAMS[bucket];
  const ladder = rng.pick(LADDERS.filter((l) => l.units.length >= p.parts));
  const first = rng.int(0, ladder.units.length - p.parts);
  // Each smaller part stays below one of the unit above it, as people write mixed amounts.
  const values = Array.from({ length: p.parts }, (_, i) =>
    i === 0 ? rng.int(1, Math.min(p.maxValue, 99)) : rng.int(1, ladder.factors[first + i - 1] - 1),
  );
  return { ladder, first, values };
}

export const units: Family = {
  name: 'units',
  templates: [
    { name: 'scale-down', make: (rng, bucket) => scaleDown(drawScale(rng, bucket)) },
    { name: 'scale-up', make: (rng, bucket) => scaleUp(drawScale(rng, bucket)) },
    { name: 'mixed', make: (rng, bucket) => mixedAmount(drawMixed(rng, bucket)) },
  ],
};

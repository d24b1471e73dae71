import { listed, plural, type Drawn, type Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: shopping lines and whether a discount and change follow; the pipes of a tank; which age puzzle. */
const PARAMS: Readonly<
  Record<Bucket, { lines: number; discount: boolean; change: boolean; inlets: number; leak: boolean; prefill: boolean; ages: AgeKind }>
> = {
  light: { lines: 2, discount: false, change: false, inlets: 1, leak: false, prefill: false, ages: 'sum-difference' },
  medium: { lines: 2, discount: false, change: true, inlets: 1, leak: true, prefill: false, ages: 'times-later' },
  hard: { lines: 3, discount: true, change: true, inlets: 2, leak: true, prefill: true, ages: 'three-people' },
};

const SHOPPERS = ['Maya', 'Omar', 'Lena', 'Tariq', 'Sofia', 'Jonas'] as const;
const ITEMS = [
  { singular: 'notebook', plural: 'notebooks' },
  { singular: 'pen', plural: 'pens' },
  { singular: 'apple', plural: 'apples' },
  { singular: 'sandwich', plural: 'sandwiches' },
  { singular: 'candle', plural: 'candles' },
  { singular: 'ticket', plural: 'tickets' },
] as const;

/** Money in whole cents throughout, so no answer meets a binary-fraction rounding. */
export function dollars(cents: number): string {
  const whole = Math.trunc(cents / 100);
  const rest = Math.abs(cents % 100);
  return rest === 0 ? String(whole) : `${whole}.${String(rest).padStart(2, '0')}`;
}
const price = (cents: number): string => `$${cents % 100 === 0 ? cents / 100 : dollars(cents)}`;

export interface ShoppingSpec {
  name: string;
  lines: readonly { count: number; item: { singular: string; plural: string }; cents: number }[];
  /** Percent off the whole bill. */
  discount?: number;
  /** Paid with this many cents; the question then asks for the change. */
  paidCents?: number;
}

export function shoppingQuestion(spec: ShoppingSpec): Drawn {
  const bought = spec.lines.map((l) => `${l.count} ${l.count === 1 ? l.item.singular : l.item.plural} at ${price(l.cents)} each`);
  let total = spec.lines.reduce((sum, l) => sum + l.count * l.cents, 0);
  let text = `${spec.name} buys ${listed(bought)}.`;
  if (spec.discount !== undefined) {
    if ((total * spec.discount) % 100 !== 0) throw new RangeError('a discount must come to whole cents');
    total -= (total * spec.discount) / 100;
    text += ` The shop takes ${spec.discount}% off the whole bill.`;
  }
  if (spec.paidCents !== undefined) {
    text += ` ${spec.name} pays with ${price(spec.paidCents)}. How much change, in dollars, does ${spec.name} get?`;
    total = spec.paidCents - total;
  } else text += ` How much, in dollars, does ${spec.name} pay?`;
  return { question: `${text} Answer with the number only.`, answer: dollars(total) };
}

function drawShopping(rng: Rng, bucket: Bucket): ShoppingSpec {
  const p = PARAMS[bucket];
  for (;;) {
    const lines = rng.sample(ITEMS, p.lines).map((item) => ({ item, count: rng.int(1, 6), cents: rng.int(2, 40) * 25 }));
    const gross = lines.reduce((sum, l) => sum + l.count * l.cents, 0);
    const discount = p.discount ? rng.pick([10, 20, 25, 50]) : undefined;
    // Drawn again until the discount comes to whole cents.
    if (discount !== undefined && (gross * discount) % 100 !== 0) continue;
    const net = gross - (discount === undefined ? 0 : (gross * discount) / 100);
    const note = [5000, 10000, 20000, 50000].find((n) => n >= net + 100) ?? Math.ceil(net / 10000 + 1) * 10000;
    return { name: rng.pick(SHOPPERS), lines, discount, paidCents: p.change ? note : undefined };
  }
}

export interface TankSpec {
  capacity: number;
  /** Litres per minute of each inlet pipe. */
  inlets: readonly number[];
  /** Litres per minute the leak drains, 0 for none. */
  leak: number;
  /** Litres already in the tank. */
  start: number;
}

export function tankQuestion({ capacity, inlets, leak, start }: TankSpec): Drawn {
  const net = inlets.reduce((a, b) => a + b, 0) - leak;
  const minutes = (capacity - start) / net;
  if (!Number.isInteger(minutes) || minutes <= 0) throw new RangeError('a tank must fill in whole minutes');
  const pipes =
    inlets.length === 1
      ? `A pipe fills it at ${inlets[0]} litres per minute`
      : `Two pipes fill it, at ${inlets[0]} and ${inlets[1]} litres per minute`;
  const leakText = leak > 0 ? `, while a leak drains ${leak} litres per minute` : '';
  const startText = start > 0 ? `already holds ${start} litres` : 'starts empty';
  return {
    question: `A tank holds ${capacity} litres and ${startText}. ${pipes}${leakText}. After how many minutes is the tank full? Answer with the number only.`,
    answer: String(minutes),
  };
}

function drawTank(rng: Rng, bucket: Bucket): TankSpec {
  const p = PARAMS[bucket];
  const inlets = Array.from({ length: p.inlets }, () => rng.int(6, 25));
  const leak = p.leak ? rng.int(1, 5) : 0;
  const net = inlets.reduce((a, b) => a + b, 0) - leak;
  const start = p.prefill ? rng.int(1, 20) * 10 : 0;
  return { capacity: start + net * rng.int(3, 40), inlets, leak, start };
}

export type AgeKind = 'sum-difference' | 'times-later' | 'three-people';

export type AgeSpec =
  | { kind: 'sum-difference'; older: number; younger: number }
  | { kind: 'times-later'; older: number; younger: number; years: number }
  | { kind: 'three-people'; ann: number; ben: number; cara: number };

/** Ages are given as the hidden solution; the question states only the relations. */
export function ageQuestion(spec: AgeSpec): Drawn {
  switch (spec.kind) {
    case 'sum-difference':
      return {
        question: `Nora is ${spec.older - spec.younger} years older than her brother Ivo. Together their ages add up to ${spec.older + spec.younger}. How old is Ivo? Answer with the number only.`,
        answer: String(spec.younger),
      };
    case 'times-later': {
      const now = spec.older / spec.younger;
      const later = (spec.older + spec.years) / (spec.younger + spec.years);
      if (!Number.isInteger(now) || !Number.isInteger(later)) throw new RangeError('age ratios must be whole');
      return {
        question: `Nora is ${now} times as old as Ivo. In ${plural(spec.years, 'year')}, Nora will be ${later} times as old as Ivo. How old is Nora now? Answer with the number only.`,
        answer: String(spec.older),
      };
    }
    case 'three-people': {
      const times = spec.ann / spec.ben;
      if (!Number.isInteger(times)) throw new RangeError('age ratio must be whole');
      const gap = spec.ann - spec.cara;
      const relation = gap >= 0 ? `${plural(gap, 'year')} younger than Ann` : `${plural(-gap, 'year')} older than Ann`;
      return {
        question: `Ann is ${times} times as old as Ben. Cara is ${relation}. The three ages add up to ${spec.ann + spec.ben + spec.cara}. How old is Cara? Answer with the number only.`,
        answer: String(spec.cara),
      };
    }
  }
}

function drawAges(rng: Rng, bucket: Bucket): AgeSpec {
  const kind = PARAMS[bucket].ages;
  if (kind === 'sum-difference') {
    const younger = rng.int(3, 40);
    return { kind, younger, older: younger + rng.int(1, 15) };
  }
  if (kind === 'three-people') {
    const ben = rng.int(3, 20);
    const ann = ben * rng.int(2, 4);
    return { kind, ann, ben, cara: Math.max(1, ann + rng.int(-12, 12)) };
  }
  for (;;) {
    // Drawn again until both ratios are whole: most draws are not.
    const younger = rng.int(2, 20);
    const older = younger * rng.int(2, 5);
    const years = rng.int(1, 30);
    const later = (older + years) / (younger + years);
    if (Number.isInteger(later) && later > 1) return { kind, older, younger, years };
  }
}

export const wordProblems: Family = {
  name: 'word-problems',
  templates: [
    { name: 'shopping', make: (rng, bucket) => shoppingQuestion(drawShopping(rng, bucket)) },
    { name: 'tank', make: (rng, bucket) => tankQuestion(drawTank(rng, bucket)) },
    { name: 'ages', make: (rng, bucket) => ageQuestion(drawAges(rng, bucket)) },
  ],
};

import { ELEMENTS, type Element } from '../facts/elements';
import type { Drawn, Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: how far into the table a lookup reaches, and whether two lookups are combined by a sum or difference. */
const PARAMS: Readonly<Record<Bucket, { maxNumber: number; combine: boolean }>> = {
  light: { maxNumber: 20, combine: false },
  medium: { maxNumber: 92, combine: false },
  hard: { maxNumber: 92, combine: true },
};

export function bySymbol(symbol: string): Element {
  const e = ELEMENTS.find((x) => x.symbol === symbol);
  if (!e) throw new RangeError(`no element with symbol ${symbol}`);
  return e;
}

export function atomicNumberQuestion(symbol: string): Drawn {
  return {
    question: `What is the atomic number of the element whose chemical symbol is ${symbol}? Answer with the number only.`,
    answer: String(bySymbol(symbol).number),
  };
}

export function combinedNumberQuestion(a: string, b: string, op: 'sum' | 'difference'): Drawn {
  const [x, y] = [bySymbol(a).number, bySymbol(b).number];
  const what = op === 'sum' ? 'the sum of' : 'the difference between (larger minus smaller)';
  return {
    question: `What is ${what} the atomic numbers of the elements whose chemical symbols are ${a} and ${b}? Answer with the number only.`,
    answer: String(op === 'sum' ? x + y : Math.abs(x - y)),
  };
}

/** Answers are names with one accepted spelling (the checker compares text exactly). */
export function elementNameQuestion(number: number): Drawn {
  const e = ELEMENTS.find((x) => x.number === number);
  if (!e || e.altName) throw new RangeError(`no single-spelling element with atomic number ${number}`);
  return { question: `Which chemical element has atomic number ${number}? Answer with the element's English name only.`, answer: e.name };
}

export function combinedNameQuestion(a: string, b: string, op: 'sum' | 'difference'): Drawn {
  const [x, y] = [bySymbol(a).number, bySymbol(b).number];
  const target = op === 'sum' ? x + y : Math.abs(x - y);
  const how = op === 'sum' ? 'the sum of' : 'the difference between';
  return {
    question: `Which chemical element's atomic number equals ${how} the atomic numbers of ${a} and ${b}? Answer with the element's English name only.`,
    answer: elementNameQuestion(target).answer,
  };
}

const within = (max: number): readonly Element[] => ELEMENTS.filter((e) => e.number <= max);

function drawNumber(rng: Rng, bucket: Bucket): Drawn {
  const p = PARAMS[bucket];
  if (!p.combine) return atomicNumberQuestion(rng.pick(within(p.maxNumber)).symbol);
  const [a, b] = rng.sample(within(p.maxNumber), 2);
  return combinedNumberQuestion(a.symbol, b.symbol, rng.chance(0.5) ? 'sum' : 'difference');
}

function drawName(rng: Rng, bucket: Bucket): Drawn {
  const p = PARAMS[bucket];
  const named = within(p.maxNumber).filter((e) => !e.altName);
  if (!p.combine) return elementNameQuestion(rng.pick(named).number);
  // Two lookups whose sum or difference lands on a single-spelling element of the table.
  for (;;) {
    const [a, b] = rng.sample(within(p.maxNumber), 2);
    const op = rng.chance(0.5) ? 'sum' : 'difference';
    const target = op === 'sum' ? a.number + b.number : Math.abs(a.number - b.number);
    if (named.some((e) => e.number === target)) return combinedNameQuestion(a.symbol, b.symbol, op);
  }
}

export const elements: Family = {
  name: 'elements',
  templates: [
    { name: 'atomic-number', make: drawNumber },
    { name: 'element-name', make: drawName },
  ],
};

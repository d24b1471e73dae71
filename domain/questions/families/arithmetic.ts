import type { Drawn, Family } from '../family';
import type { Rng } from '../rng';
import type { Bucket } from '../types';

/** Difficulty: how many operations a chain has, how many operands an expression has, and how large they get. */
const PARAMS: Readonly<Record<Bucket, { steps: number; operands: number; max: number; factorMax: number }>> = {
  light: { steps: 2, operands: 3, max: 20, factorMax: 5 },
  medium: { steps: 4, operands: 4, max: 60, factorMax: 9 },
  hard: { steps: 7, operands: 6, max: 250, factorMax: 12 },
};

export type ChainOp = 'add' | 'subtract' | 'multiply' | 'divide';
export interface ChainSpec {
  start: number;
  ops: readonly { op: ChainOp; n: number }[];
}

const CHAIN_WORDS: Readonly<Record<ChainOp, string>> = { add: 'add', subtract: 'subtract', multiply: 'multiply by', divide: 'divide by' };

export function chainQuestion(spec: ChainSpec): Drawn {
  let value = spec.start;
  for (const { op, n } of spec.ops)
    value = op === 'add' ? value + n : op === 'subtract' ? value - n : op === 'multiply' ? value * n : value / n;
  if (!Number.isSafeInteger(value)) throw new RangeError(`chain does not stay whole: ${JSON.stringify(spec)}`);
  const steps = spec.ops.map(({ op, n }, i) => `${i === 0 ? '' : 'then '}${CHAIN_WORDS[op]} ${n}`);
  const text = steps.join(', ');
  return {
    question: `Start with ${spec.start}. ${text[0].toUpperCase()}${text.slice(1)}. What number do you end with? Answer with the number only.`,
    answer: String(value),
  };
}

function drawChain(rng: Rng, bucket: Bucket): ChainSpec {
  const p = PARAMS[bucket];
  let value = rng.int(2, p.max);
  const start = value;
  const ops: { op: ChainOp; n: number }[] = [];
  while (ops.length < p.steps) {
    const op = rng.pick<ChainOp>(['add', 'subtract', 'multiply', 'divide']);
    if (op === 'add' || (op === 'multiply' && value > 10_000)) {
      const n = rng.int(1, p.max);
      ops.push({ op: 'add', n });
      value += n;
    } else if (op === 'subtract') {
      // Staying at or above zero keeps the light and medium chains free of negative numbers.
      if (value < 2) continue;
      const n = rng.int(1, Math.min(p.max, value - 1));
      ops.push({ op, n });
      value -= n;
    } else if (op === 'multiply') {
      const n = rng.int(2, p.factorMax);
      ops.push({ op, n });
      value *= n;
    } else {
      const divisors = Array.from({ length: p.factorMax - 1 }, (_, i) => i + 2).filter((d) => value % d === 0);
      if (divisors.length === 0) continue;
      const n = rng.pick(divisors);
      ops.push({ op, n });
      value /= n;
    }
  }
  return { start, ops };
}

export type Expr = number | { op: '+' | '-' | '*'; left: Expr; right: Expr };

export function evaluate(e: Expr): number {
  if (typeof e === 'number') return e;
  const l = evaluate(e.left);
  const r = evaluate(e.right);
  return e.op === '+' ? l + r : e.op === '-' ? l - r : l * r;
}

/** Brackets only where precedence needs them, so the question also tests the order of operations. */
export function render(e: Expr): string {
  if (typeof e === 'number') return String(e);
  const symbol = e.op === '*' ? '×' : e.op === '-' ? '−' : '+';
  const weak = (x: Expr): boolean => typeof x !== 'number' && x.op !== '*';
  const left = e.op === '*' && weak(e.left) ? `(${render(e.left)})` : render(e.left);
  const right = (e.op === '*' && weak(e.right)) || (e.op === '-' && weak(e.right)) ? `(${render(e.right)})` : render(e.right);
  return `${left} ${symbol} ${right}`;
}

export function expressionQuestion(e: Expr): Drawn {
  return { question: `Evaluate ${render(e)}. Answer with the number only.`, answer: String(evaluate(e)) };
}

function drawExpression(rng: Rng, bucket: Bucket): Expr {
  const p = PARAMS[bucket];
  // Products take small factors, so hard expressions test care rather than long multiplication.
  const parts: Expr[] = Array.from({ length: p.operands }, () => rng.int(2, p.max));
  while (parts.length > 1) {
    const i = rng.int(0, parts.length - 2);
    const op = rng.pick(['+', '-', '*'] as const);
    const [left, right] = [parts[i], parts[i + 1]];
    const shrink = (x: Expr): Expr => (typeof x === 'number' ? Math.min(x, p.factorMax + 3) : x);
    parts.splice(i, 2, op === '*' ? { op, left: shrink(left), right: shrink(right) } : { op, left, right });
  }
  return parts[0];
}

export const arithmetic: Family = {
  name: 'arithmetic',
  templates: [
    { name: 'chain', make: (rng, bucket) => chainQuestion(drawChain(rng, bucket)) },
    { name: 'expression', make: (rng, bucket) => expressionQuestion(drawExpression(rng, bucket)) },
  ],
};

import { shuffled } from '../prng';
import type { Family } from './family';
import { arithmetic } from './families/arithmetic';
import { counting } from './families/counting';
import { dates } from './families/dates';
import { elements } from './families/elements';
import { logicGrid } from './families/logic-grid';
import { strings } from './families/strings';
import { units } from './families/units';
import { wordProblems } from './families/word-problems';
import { rngFor } from './rng';
import { BUCKETS, type Bucket, type Question } from './types';

const REGISTRY: readonly Family[] = [arithmetic, units, dates, logicGrid, counting, strings, wordProblems, elements];

/** The generated families, for reporting. */
export const FAMILIES: readonly string[] = REGISTRY.map((f) => f.name);

/** Every cluster (`family.template`) the generator can produce. */
export const CLUSTERS: readonly string[] = REGISTRY.flatMap((f) => f.templates.map((t) => `${f.name}.${t.name}`));

/** The same cap as an imported set. */
export const MAX_GENERATED = 5000;

/** How a generated question asks for its answer, so the checker knows where to read it. */
export const ANSWER_REQUEST = 'End your reply with a line of the form "Final answer: <answer>".';

/** Redraws of a question whose text repeats one already in the set; small template spaces (light) may still repeat. */
const REDRAWS = 20;

/**
 * A question set drawn from the seed: within each bucket the families take turns in an order shuffled by the seed,
 * and each family takes turns over its templates. Each question draws from its own stream (seed, bucket, index,
 * redraw), so a question does not change when another template changes how much it draws.
 */
export function generateQuestions(seed: number, counts: Readonly<Record<Bucket, number>>): Question[] {
  const total = BUCKETS.reduce((sum, b) => sum + counts[b], 0);
  for (const b of BUCKETS) {
    if (!Number.isSafeInteger(counts[b]) || counts[b] < 0) {
      throw new RangeError(`count for ${b} must be a whole number ≥ 0, got ${counts[b]}`);
    }
  }
  if (total > MAX_GENERATED) throw new RangeError(`at most ${MAX_GENERATED} questions, asked for ${total}`);
  const out: Question[] = [];
  const seen = new Set<string>();
  for (const bucket of BUCKETS) {
    const order = shuffled(REGISTRY, rngFor(seed, bucket, 'order').next);
    const used = new Map<Family, number>();
    for (let i = 0; i < counts[bucket]; i++) {
      const family = order[i % order.length];
      const turn = used.get(family) ?? 0;
      used.set(family, turn + 1);
      const template =
        family.templates[(turn + rngFor(seed, bucket, family.name).int(0, family.templates.length - 1)) % family.templates.length];
      let drawn = template.make(rngFor(seed, bucket, i, 0), bucket);
      for (let redraw = 1; redraw <= REDRAWS && seen.has(drawn.question); redraw++) {
        drawn = template.make(rngFor(seed, bucket, i, redraw), bucket);
      }
      seen.add(drawn.question);
      out.push({
        id: `${bucket}-${String(i + 1).padStart(4, '0')}-${family.name}`,
        question: `${drawn.question}\n${ANSWER_REQUEST}`,
        answer: drawn.answer,
        bucket,
        cluster: `${family.name}.${template.name}`,
      });
    }
  }
  return out;
}

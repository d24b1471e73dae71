import { z } from 'zod';
import type { Judgment } from './judge';
import { parseJsonReply } from './json-reply';

// Kept apart from judge.ts: the workflow bundle imports judge.ts, and every new workflow evaluates its imports
// again, so zod there cost ~5 ms of workflow-thread time per deliberation. Replies are parsed in the activity.
// Ranges are clamped, not refused: a grammar-constrained small model keeps the shape but not always a decimal's range.
const clamped = (min: number, max: number) => z.number().transform((n) => Math.min(max, Math.max(min, n)));
const JudgeReply = z.object({
  scores: z.record(z.string(), clamped(0, 10)),
  best: z.string(),
  why: z.string(),
  divergence: clamped(0, 1),
  converged: z.boolean(),
  contested: z.object({ label: z.string(), quote: z.string(), why: z.string() }).nullable().optional(),
  factual_conflict: z.boolean().optional(),
});

/** Reads an engine's judgment; undefined when it is not the JSON asked for or names labels that were not shown. */
export function parseJudgment(text: string, labels: readonly string[]): Judgment | undefined {
  const r = parseJsonReply(text, JudgeReply);
  if (!r) return undefined;
  if (!labels.includes(r.best) || !labels.every((l) => typeof r.scores[l] === 'number')) return undefined;
  const contested = r.contested && labels.includes(r.contested.label) ? r.contested : null;
  return {
    scores: r.scores,
    best: r.best,
    why: r.why,
    divergence: r.divergence,
    converged: r.converged,
    contested,
    factualConflict: r.factual_conflict ?? false,
  };
}

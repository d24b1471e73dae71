import type { LabelledAnswer } from './prompts';

/** What a judgment of one round says, by anonymous label. */
export interface Judgment {
  scores: Record<string, number>;
  best: string;
  why: string;
  divergence: number;
  converged: boolean;
  contested: { label: string; quote: string; why: string } | null;
  factualConflict: boolean;
}

/** Below this divergence the seats are taken to hold one position. */
export const CONVERGED_BELOW = 0.35;

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? []);
}

function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let both = 0;
  for (const w of a) if (b.has(w)) both++;
  return both / (a.size + b.size - both);
}

/**
 * The fallback judge when no judge engine gives a usable verdict: an answer that agrees with the others scores
 * higher (agreement is the best cheap proxy for correctness); divergence is one minus the mean pairwise overlap.
 */
export function heuristicJudgment(answers: readonly LabelledAnswer[]): Judgment {
  const sets = answers.map((a) => words(a.text));
  const scores: Record<string, number> = {};
  let pairSum = 0;
  let pairs = 0;
  answers.forEach((a, i) => {
    let agree = 0;
    sets.forEach((s, j) => {
      if (i === j) return;
      const sim = jaccard(sets[i], s);
      agree += sim;
      if (j > i) {
        pairSum += sim;
        pairs++;
      }
    });
    scores[a.label] = Math.round((answers.length > 1 ? (agree / (answers.length - 1)) * 10 : 5) * 100) / 100;
  });
  const best = answers.reduce((b, a) => (scores[a.label] > scores[b.label] ? a : b), answers[0]).label;
  const divergence = pairs ? Math.round((1 - pairSum / pairs) * 1000) / 1000 : 0;
  const converged = divergence < CONVERGED_BELOW;
  const outlier = answers.reduce((w, a) => (scores[a.label] < scores[w.label] ? a : w), answers[0]);
  const contested =
    !converged && answers.length > 1
      ? { label: outlier.label, quote: outlier.text.slice(0, 160), why: 'This answer shares the least with the others.' }
      : null;
  return {
    scores,
    best,
    why: `Answer ${best} agrees most with the rest of the panel (heuristic judge).`,
    divergence,
    converged,
    contested,
    factualConflict: false,
  };
}

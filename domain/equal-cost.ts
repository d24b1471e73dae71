import type { Tier } from './modes';
import { answerKey } from './questions/check';
import type { Question } from './questions/types';
import { pairedWinRateDifference, wilsonInterval, type Interval, type PairedDifference } from './statistics';

/**
 * Equal-cost baselines (issue 39 item 2): beside the spec's baseline (the strongest seat answering once), a run asks
 * the same engine k times, k chosen so its samples cost what the mode's seats cost per question, and aggregates them
 * two ways: Self-MoA (arXiv 2502.00674: the samples handed to one aggregation call, on the mode's own synthesis
 * engine, the part of the mode's budget its judge and synthesis spend) and, where answers are checkable, their
 * majority vote (arXiv 2508.17536). Pure: how k is chosen, the vote, and the arms' figures over a run's questions.
 */

/** At least two samples, or there is nothing to aggregate. */
export const MIN_SAMPLES = 2;
/** At most this many, so a mode of many cheap seats against a far cheaper engine cannot make a run's questions unbounded. */
export const MAX_SAMPLES = 12;
/** Recorded questions of the mode version (per tier) before their costs replace the quote's projection. */
export const RECORDED_MIN_QUESTIONS = 20;

/** How k was chosen for one tier of a run: shown in the poll and the dry run, so anyone can redo the division. */
export interface SamplePlan {
  tier: Tier;
  /** The mode's strongest seat engine: the spec's baseline, and the engine every sample asks. */
  engineId: string;
  samples: number;
  /** `recorded`: means over the mode version's earlier questions; `projected`: the quote's arithmetic. */
  basis: 'recorded' | 'projected';
  /** Questions the recorded means are over (0 when projected). */
  recordedQuestions: number;
  /** What the mode's seats cost per question, and one answer of the engine, in µ$ (means when recorded). */
  modeSeatsMicros: number;
  sampleMicros: number;
}

/** k = ⌊mode's seats' cost ÷ one sample's cost⌋, within [MIN_SAMPLES, MAX_SAMPLES]. */
export function samplesAtEqualCost(modeSeatsMicros: number, sampleMicros: number): number {
  if (!(sampleMicros > 0)) return MIN_SAMPLES;
  return Math.min(MAX_SAMPLES, Math.max(MIN_SAMPLES, Math.floor(modeSeatsMicros / sampleMicros)));
}

/** One arm's answer to one question, as `include=questions` shows it. */
export interface ArmAnswer {
  answer: string;
  correct: boolean;
  costMicros: number;
  latencyMs: number;
}

/** What a question's equal-cost arms gave; the baseline's own answer is the first of the samples. */
export interface QuestionArms {
  samples: number;
  /** Samples that answered (a sample that failed for good is left out of both arms). */
  answered: number;
  /** What the arms' own calls cost: the samples after the baseline's answer, and the aggregation. */
  addedMicros: number;
  /** Null when no sample answered or the aggregation call failed. */
  selfMoa: ArmAnswer | null;
  /** Null when no sample answered; with none readable, the first sample with no votes (so wrong, as any arm's unreadable answer is). */
  majorityVote: (ArmAnswer & { votes: number }) | null;
}

/** What the mode and its baseline cost and took on one question: the recorded figures k is chosen from. */
export interface QuestionCosts {
  modeMicros: number;
  /** The seats' share of `modeMicros` (the rest is judge and synthesis). */
  modeSeatsMicros: number;
  baselineMicros: number;
  modeLatencyMs: number;
  baselineLatencyMs: number;
}

/**
 * The most common answer among the samples (by the checker's key), the earliest on a tie. With none readable, the
 * first sample and no votes: the arm then answers (wrongly) on every question where a sample came back, so its
 * accuracy has the same denominator as the other arms'. Null only when there is no sample.
 */
export function majorityVote(
  samples: readonly string[],
  asked: Pick<Question, 'answerKind' | 'choices'>,
): { index: number; votes: number } | null {
  if (samples.length === 0) return null;
  const keys = samples.map((s) => answerKey(s, asked));
  let best = { index: 0, votes: 0 };
  keys.forEach((key, index) => {
    if (key === undefined || keys.indexOf(key) !== index) return;
    const votes = keys.filter((k) => k === key).length;
    if (votes > best.votes) best = { index, votes };
  });
  return best;
}

export const ARMS = ['mode', 'baseline', 'self_moa', 'majority_vote'] as const;
export type Arm = (typeof ARMS)[number];

export interface ArmSummary {
  arm: Arm;
  /** Questions this arm answered with a readable result. */
  questions: number;
  accuracy: number;
  /** Wilson's 95% interval over the questions. */
  accuracyInterval: Interval;
  costPerQuestionMicros: number;
  latencyMsMedian: number;
  /**
   * The mode's accuracy minus this arm's on the questions both answered, with the clustered 95% interval of
   * pairedWinRateDifference (clusters: the questions' templates or sources); null for the mode itself.
   */
  modeMinusArm: PairedDifference | null;
}

/** The figures a question's row carries for the arms (runs written before issue 39 carry none). */
export interface ArmRow {
  questionId: string;
  cluster: string;
  modeCorrect: boolean;
  baselineCorrect: boolean;
  costs?: QuestionCosts;
  arms?: QuestionArms;
}

interface Scored {
  question: string;
  cluster: string;
  correct: boolean;
  costMicros: number;
  latencyMs: number;
}

function armScores(rows: readonly ArmRow[], arm: Arm): Scored[] {
  return rows.flatMap((r): Scored[] => {
    const at = (correct: boolean, costMicros: number, latencyMs: number): Scored[] => [
      { question: r.questionId, cluster: r.cluster, correct, costMicros, latencyMs },
    ];
    const costs = r.costs as QuestionCosts;
    if (arm === 'mode') return at(r.modeCorrect, costs.modeMicros, costs.modeLatencyMs);
    if (arm === 'baseline') return at(r.baselineCorrect, costs.baselineMicros, costs.baselineLatencyMs);
    const answer = arm === 'self_moa' ? r.arms?.selfMoa : r.arms?.majorityVote;
    return answer ? at(answer.correct, answer.costMicros, answer.latencyMs) : [];
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[mid] : Math.round((sorted[mid - 1] + sorted[mid]) / 2);
}

/** The mode minus an arm, paired by question: pairedWinRateDifference's statistic, its reasons said of arms. */
function armDifference(
  mode: readonly { question: string; cluster: string; score: number }[],
  arm: readonly { question: string; cluster: string; score: number }[],
): PairedDifference {
  const d = pairedWinRateDifference(mode, arm);
  return d.clusters < 2 ? { ...d, noInterval: 'Fewer than two clusters of questions were answered by both the mode and the arm.' } : d;
}

/** Every arm's accuracy, cost and latency over the questions that ran the arms; null when none did. */
export function equalCostSummary(rows: readonly ArmRow[]): ArmSummary[] | null {
  const armed = rows.filter((r) => r.arms && r.costs);
  if (armed.length === 0) return null;
  const mode = armScores(armed, 'mode');
  const paired = (s: readonly Scored[]): { question: string; cluster: string; score: number }[] =>
    s.map((x) => ({ question: x.question, cluster: x.cluster, score: Number(x.correct) }));
  return ARMS.map((arm): ArmSummary => {
    const scores = armScores(armed, arm);
    const right = scores.filter((s) => s.correct).length;
    const n = scores.length;
    return {
      arm,
      questions: n,
      accuracy: n === 0 ? 0 : right / n,
      accuracyInterval: wilsonInterval(right, n),
      costPerQuestionMicros: n === 0 ? 0 : Math.round(scores.reduce((t, s) => t + s.costMicros, 0) / n),
      latencyMsMedian: median(scores.map((s) => s.latencyMs)),
      modeMinusArm: arm === 'mode' ? null : armDifference(paired(mode), paired(scores)),
    };
  });
}

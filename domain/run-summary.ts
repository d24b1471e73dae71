import type { DeliberationValue } from './classifier';
import type { Depth } from './modes';
import { BUCKETS, type Bucket } from './questions/types';
import type { BucketCounts, QuestionResult, RecusalRecord, RunKind } from './runs';
import { verdictScore } from './run-judging';
import {
  clusteredWinRate,
  fleissKappa,
  pairedWinRateDifference,
  positionConsistency,
  verdictFor,
  wilsonInterval,
  type CertificationVerdict,
  type Interval,
  type PairedDifference,
  type PairedScore,
  type WinRateSummary,
} from './statistics';

/**
 * A run's results from its question rows (DESIGN §10): win rate with a clustered interval (the question is the
 * cluster, every judge × repeat inside it), exact-answer accuracy of mode and baseline with Wilson intervals, judge
 * agreement, position consistency and recusals, per bucket and overall; a certification adds its verdict.
 */

/** A judge whose verdicts flip on more than this share of mirrored pairs is not reading the answers, only their order. */
export const POSITION_FLIP_THRESHOLD = 0.2;

export interface Accuracy {
  correct: number;
  n: number;
  rate: number;
  interval: Interval;
}

export interface ResultGroup {
  questions: number;
  judgments: number;
  /** Null until at least one verdict was read. */
  winRate: WinRateSummary | null;
  mode: Accuracy;
  baseline: Accuracy;
}

export interface RecusalSummary extends RecusalRecord {
  questions: number;
}

/**
 * What a verdict, or a run's use as evidence, needs (issue 26 item 8): the run was paid for its questions, so its
 * statistics stand only on nearly all of them. A question counts when at least one judge's verdict on it was read.
 * 95% overall keeps a certification's 150 clustered questions (the ladder's interval is computed for them) and
 * lets a few engine failures pass; 90% in every bucket keeps a hard bucket that mostly failed from being hidden by
 * easy ones that did not.
 */
export const VERDICT_COVERAGE = { overall: 0.95, perBucket: 0.9 } as const;

export interface Coverage {
  judged: number;
  total: number;
  perBucket: Record<Bucket, { judged: number; total: number }>;
  met: boolean;
}

export function coverageOf(results: readonly QuestionResult[], totals: BucketCounts): Coverage {
  const judged = (r: QuestionResult): boolean => r.judgments.some((j) => j.verdict !== null);
  const perBucket = Object.fromEntries(
    BUCKETS.map((b) => [b, { judged: results.filter((r) => r.bucket === b && judged(r)).length, total: totals[b] }]),
  ) as Coverage['perBucket'];
  const total = BUCKETS.reduce((n, b) => n + totals[b], 0);
  const all = BUCKETS.reduce((n, b) => n + perBucket[b].judged, 0);
  const met =
    total > 0 &&
    all >= VERDICT_COVERAGE.overall * total &&
    BUCKETS.every((b) => perBucket[b].total === 0 || perBucket[b].judged >= VERDICT_COVERAGE.perBucket * perBucket[b].total);
  return { judged: all, total, perBucket, met };
}

/**
 * How a run that ran its course ends: `incomplete` when no judge's verdict was read at all, or when a
 * certification lacks the coverage its verdict needs; else as asked. A summary from before coverage was recorded
 * ends as it did then (its workflow replays the same way).
 */
export function endStateOf(
  kind: RunKind,
  state: 'completed' | 'failed' | 'cancelled',
  summary: RunSummary | null,
): 'completed' | 'failed' | 'cancelled' | 'incomplete' {
  if (state !== 'completed' || !summary?.coverage) return state;
  if (summary.coverage.judged === 0 || (kind === 'certification' && !summary.coverage.met)) return 'incomplete';
  return state;
}

export interface RunSummary {
  perBucket: Record<Bucket, ResultGroup>;
  overall: ResultGroup;
  /** Fleiss' kappa over win / tie / loss, each (question, repeat) rated by every judge; null when undefined. */
  judgeAgreement: number | null;
  positionConsistency: { pairs: number; flips: number; flipRate: number; threshold: number; flagged: boolean };
  recusals: RecusalSummary[];
  unreadVerdicts: number;
  /** Question templates the run drew from. */
  templates: number;
  costMicros: number;
  /** Null where the run's planned counts are not known (the advisor's pooled results). */
  coverage: Coverage | null;
  /** A certification's, and only with its coverage met. */
  verdict: CertificationVerdict | null;
}

function accuracy(correct: number, n: number): Accuracy {
  return { correct, n, rate: n === 0 ? 0 : correct / n, interval: wilsonInterval(correct, n) };
}

/** Every readable verdict's score, the question its cluster (as the run's own interval has it). */
function judgedScores(results: readonly QuestionResult[]): PairedScore[] {
  return results.flatMap((r) =>
    r.judgments.flatMap((j) =>
      j.verdict === null ? [] : [{ question: r.questionId, cluster: r.questionId, score: verdictScore(j.verdict) }],
    ),
  );
}

/** A paired re-run against the run whose questions it ran: the difference of win rates, question by question. */
export function pairedComparison(now: readonly QuestionResult[], before: readonly QuestionResult[]): PairedDifference {
  return pairedWinRateDifference(judgedScores(now), judgedScores(before));
}

function group(results: readonly QuestionResult[]): ResultGroup {
  const scores = judgedScores(results);
  return {
    questions: results.length,
    judgments: scores.length,
    winRate: scores.length === 0 ? null : clusteredWinRate(scores),
    mode: accuracy(results.filter((r) => r.modeCorrect).length, results.length),
    baseline: accuracy(results.filter((r) => r.baselineCorrect).length, results.length),
  };
}

/** Each judge's verdicts at repeats 2k−1 and 2k saw the same answers in mirrored order. */
function mirroredPairs(results: readonly QuestionResult[]): { first: string; second: string }[] {
  const pairs: { first: string; second: string }[] = [];
  for (const r of results) {
    for (const j of r.judgments) {
      if (j.repeat % 2 !== 1 || j.verdict === null) continue;
      const mirror = r.judgments.find((k) => k.slot === j.slot && k.repeat === j.repeat + 1);
      if (mirror?.verdict) pairs.push({ first: j.verdict, second: mirror.verdict });
    }
  }
  return pairs;
}

/** Subjects for agreement: one per (question, repeat) where every judge gave a readable verdict. */
function agreementSubjects(results: readonly QuestionResult[]): string[][] {
  const subjects: string[][] = [];
  for (const r of results) {
    const repeats = new Set(r.judgments.map((j) => j.repeat));
    for (const repeat of repeats) {
      const verdicts = r.judgments.filter((j) => j.repeat === repeat).map((j) => j.verdict);
      if (verdicts.length >= 2 && verdicts.every((v) => v !== null)) subjects.push(verdicts as string[]);
    }
  }
  return subjects;
}

function recusalSummary(results: readonly QuestionResult[]): RecusalSummary[] {
  const byKey = new Map<string, RecusalSummary>();
  for (const r of results) {
    for (const rec of r.recusals) {
      const key = `${rec.slot}|${rec.engineId}|${rec.replacedBy ?? ''}`;
      const seen = byKey.get(key);
      if (seen) seen.questions += 1;
      else byKey.set(key, { ...rec, questions: 1 });
    }
  }
  return [...byKey.values()];
}

export function summarizeRun(kind: RunKind, results: readonly QuestionResult[], totals?: BucketCounts): RunSummary {
  const overall = group(results);
  const coverage = totals ? coverageOf(results, totals) : null;
  const consistency = positionConsistency(mirroredPairs(results));
  return {
    perBucket: Object.fromEntries(BUCKETS.map((b) => [b, group(results.filter((r) => r.bucket === b))])) as Record<Bucket, ResultGroup>,
    overall,
    judgeAgreement: fleissKappa(agreementSubjects(results)),
    positionConsistency: {
      ...consistency,
      threshold: POSITION_FLIP_THRESHOLD,
      flagged: consistency.pairs > 0 && consistency.flipRate > POSITION_FLIP_THRESHOLD,
    },
    recusals: recusalSummary(results),
    unreadVerdicts: results.reduce((n, r) => n + r.judgments.filter((j) => j.verdict === null).length, 0),
    templates: new Set(results.map((r) => r.cluster)).size,
    costMicros: results.reduce((n, r) => n + r.costMicros, 0),
    coverage,
    // No verdict without its questions: a certification short of the coverage ends `incomplete`, without one.
    verdict: kind === 'certification' && coverage?.met ? verdictFor(overall.winRate?.interval.low ?? 0) : null,
  };
}

/** Bucket of a prompt the classifier put at `depth`. */
const DEPTH_BUCKET: Readonly<Record<Depth, Bucket>> = { light: 'light', medium: 'medium', deep: 'hard' };

/**
 * The estimate's `deliberation_value` grounded in the mode's finished runs, for the prompt's bucket: the panel
 * likely helps when the interval of its win rate against the baseline lies above one half, likely hurts when it
 * lies below, and is unknown when it straddles. Undefined when no run has judged that bucket.
 */
export function runEvidence(summary: RunSummary, depth: Depth, runId: string): DeliberationValue | undefined {
  const bucket = DEPTH_BUCKET[depth];
  const w = summary.perBucket[bucket].winRate;
  if (!w) return undefined;
  const f = (x: number): string => x.toFixed(3);
  const evidence = `run ${runId}, ${bucket} questions: n=${w.clusters} (${w.judgments} judgments), win rate ${f(w.winRate)} vs the baseline, 95% interval [${f(w.interval.low)}, ${f(w.interval.high)}]`;
  if (w.interval.low > 0.5)
    return {
      verdict: 'likely_helps',
      reason: 'On questions like this one the panel beat its strongest engine alone.',
      basis: 'test_runs',
      evidence,
    };
  if (w.interval.high < 0.5)
    return {
      verdict: 'likely_hurts',
      reason: 'On questions like this one the panel lost to its strongest engine alone.',
      basis: 'test_runs',
      evidence,
    };
  return {
    verdict: 'unknown',
    reason: 'On questions like this one the panel and its strongest engine were too close to call.',
    basis: 'test_runs',
    evidence,
  };
}

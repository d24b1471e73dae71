import type { DeliberationValue } from './classifier';
import { equalCostSummary, seatsVoteSummary, type ArmSummary, type SeatsVoteSummary } from './equal-cost';
import type { Depth } from './modes';
import { BUCKETS, type Bucket } from './questions/types';
import type { BucketCounts, QuestionResult, RecusalRecord, RunKind } from './runs';
import { verdictScore, type JudgeSlot } from './run-judging';
import {
  attemptVerdict,
  clusteredWinRate,
  fleissKappa,
  pairedWinRateDifference,
  positionConsistency,
  wilsonInterval,
  type AttemptVerdict,
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
 * What a verdict, or a run's use as evidence, needs (issue 26 item 8, issue 38 item 2): the run was paid for its
 * questions and its judges' verdicts on them, so its statistics stand only on nearly all of both.
 * - Questions: a question counts when at least one judge's verdict on it was read; 95% overall keeps a
 *   certification's 150 clustered questions (the ladder's interval is computed for them) and lets a few engine
 *   failures pass; 90% in every bucket keeps a hard bucket that mostly failed from being hidden by easy ones.
 * - Judgments: planned are questions × repeats for each judge slot. 90% of all planned judgments readable keeps the
 *   interval on about the judgments it was sized for; 80% of each judge's planned judgments in every bucket keeps a
 *   silent judge (or two) from passing on the others' verdicts: one question read by one judge counted as covered
 *   before, so a certification two of whose three judges never answered still got a verdict.
 */
export const VERDICT_COVERAGE = { overall: 0.95, perBucket: 0.9, judgments: 0.9, perJudgePerBucket: 0.8 } as const;

export interface JudgmentCount {
  readable: number;
  planned: number;
}

export interface JudgmentCoverage extends JudgmentCount {
  perBucket: Record<Bucket, JudgmentCount>;
  /** Each judge slot's readable and planned judgments, per bucket. */
  perJudge: Partial<Record<JudgeSlot, Record<Bucket, JudgmentCount>>>;
}

export interface Coverage {
  judged: number;
  total: number;
  perBucket: Record<Bucket, { judged: number; total: number }>;
  /** Absent on summaries written before 2026-11-27, whose `met` counted questions only. */
  judgments?: JudgmentCoverage;
  met: boolean;
}

/** What a run planned: its questions per bucket, its judge slots and each judge's repeats (a RunSpec is one). */
export interface RunPlan {
  counts: BucketCounts;
  judges: readonly JudgeSlot[];
  repeats: number;
}

function judgmentCoverage(results: readonly QuestionResult[], plan: RunPlan): JudgmentCoverage {
  const count = (slot: JudgeSlot | null, bucket: Bucket): JudgmentCount => {
    const slots = slot === null ? plan.judges.length : 1;
    const readable = results
      .filter((r) => r.bucket === bucket)
      .reduce((n, r) => n + r.judgments.filter((j) => j.verdict !== null && (slot === null || j.slot === slot)).length, 0);
    return { readable, planned: plan.counts[bucket] * plan.repeats * slots };
  };
  const perBucket = Object.fromEntries(BUCKETS.map((b) => [b, count(null, b)])) as Record<Bucket, JudgmentCount>;
  const perJudge = Object.fromEntries(
    plan.judges.map((slot) => [slot, Object.fromEntries(BUCKETS.map((b) => [b, count(slot, b)]))]),
  ) as JudgmentCoverage['perJudge'];
  const sum = (f: (c: JudgmentCount) => number): number => BUCKETS.reduce((n, b) => n + f(perBucket[b]), 0);
  return { readable: sum((c) => c.readable), planned: sum((c) => c.planned), perBucket, perJudge };
}

export function coverageOf(results: readonly QuestionResult[], plan: RunPlan): Coverage {
  const totals = plan.counts;
  const judged = (r: QuestionResult): boolean => r.judgments.some((j) => j.verdict !== null);
  const perBucket = Object.fromEntries(
    BUCKETS.map((b) => [b, { judged: results.filter((r) => r.bucket === b && judged(r)).length, total: totals[b] }]),
  ) as Coverage['perBucket'];
  const total = BUCKETS.reduce((n, b) => n + totals[b], 0);
  const all = BUCKETS.reduce((n, b) => n + perBucket[b].judged, 0);
  const judgments = judgmentCoverage(results, plan);
  const enough = (c: JudgmentCount, share: number): boolean => c.planned === 0 || c.readable >= share * c.planned;
  const met =
    total > 0 &&
    all >= VERDICT_COVERAGE.overall * total &&
    BUCKETS.every((b) => perBucket[b].total === 0 || perBucket[b].judged >= VERDICT_COVERAGE.perBucket * perBucket[b].total) &&
    enough(judgments, VERDICT_COVERAGE.judgments) &&
    Object.values(judgments.perJudge).every((byBucket) => BUCKETS.every((b) => enough(byBucket[b], VERDICT_COVERAGE.perJudgePerBucket)));
  return { judged: all, total, perBucket, judgments, met };
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
  /** A certification's, and only with its coverage met: `attempt.verdict`, the ladder with attempts counted. */
  verdict: CertificationVerdict | null;
  /**
   * Which attempt on its mode configuration the certification was, the α it was held to and its bound at that α
   * (issue 38 item 3); null where `verdict` is. Absent on summaries written before 2026-11-27 (their verdict is the
   * plain ladder's, attempts uncounted).
   */
  attempt?: AttemptVerdict | null;
  /**
   * Every arm's accuracy against the gold answers, cost and latency, and the mode's paired difference against each
   * (issue 39 item 2); null when the run ran no equal-cost arms. Absent on summaries written before them.
   */
  equalCost?: ArmSummary[] | null;
  /**
   * The answer the mode returned against its seats' own vote, paired on the same seat outputs (issue 52 item 1): what
   * the final step throws away. Null when no question recorded its seats; absent on summaries written before them.
   */
  seatsVote?: SeatsVoteSummary | null;
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

/**
 * The run's summary from its question rows; `plan` (its spec) gives the coverage, and a certification's `attempt` on
 * its mode configuration (from 1) the α its verdict is held to.
 */
export function summarizeRun(kind: RunKind, results: readonly QuestionResult[], plan?: RunPlan, attempt = 1): RunSummary {
  const overall = group(results);
  const coverage = plan ? coverageOf(results, plan) : null;
  // No verdict without its questions: a certification short of the coverage ends `incomplete`, without one.
  const attempted = kind === 'certification' && coverage?.met ? attemptVerdict(overall.winRate, attempt) : null;
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
    verdict: attempted?.verdict ?? null,
    attempt: attempted,
    equalCost: equalCostSummary(results),
    seatsVote: seatsVoteSummary(results),
  };
}

/** `+0.120 [0.040, 0.200]`: the mode's accuracy minus an arm's, with its paired 95% interval where there is one. */
function armDifference(a: ArmSummary): string {
  const d = a.modeMinusArm;
  if (!d) return 'n/a';
  const f = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
  return d.interval ? `${f(d.difference)} [${f(d.interval.low)}, ${f(d.interval.high)}]` : `${f(d.difference)} (no interval)`;
}

/** The arms the panel must beat, besides its baseline, before the estimate says it likely helps. */
const EQUAL_COST_ARMS = ['self_moa', 'majority_vote'] as const;

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
  if (w.interval.low > 0.5) {
    // Beating one call of the strongest engine is not enough (issue 39 item 2): the same money spent on that engine's
    // samples must lose to the panel too: both equal-cost arms measured, each paired interval above zero (an arm
    // that answered no question is not beaten).
    const arms = (summary.equalCost ?? []).filter((a) => (a.arm === 'self_moa' || a.arm === 'majority_vote') && a.questions > 0);
    const beaten = EQUAL_COST_ARMS.every((name) => arms.some((a) => a.arm === name && (a.modeMinusArm?.interval?.low ?? 0) > 0));
    if (!beaten)
      return {
        verdict: 'unknown',
        reason:
          arms.length === 0
            ? 'The panel beat its strongest engine alone, but no run measured it against the same money spent on that engine.'
            : 'The panel beat its strongest engine alone, but not clearly the same money spent on that engine (its equal-cost samples).',
        basis: 'test_runs',
        evidence: `${evidence}${arms.map((a) => `; accuracy minus ${a.arm} ${armDifference(a)}`).join('')}`,
      };
    return {
      verdict: 'likely_helps',
      reason: 'On questions like this one the panel beat its strongest engine alone and the same money spent on that engine.',
      basis: 'test_runs',
      evidence: `${evidence}${arms.map((a) => `; accuracy minus ${a.arm} ${armDifference(a)}`).join('')}`,
    };
  }
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

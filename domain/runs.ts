import type { QuestionArms, QuestionCosts, QuestionSeats, SamplePlan } from './equal-cost';
import type { ModeConfig, Depth, Tier } from './modes';
import { BUCKETS, type Bucket, type Question } from './questions/types';
import { JUDGE_SLOTS, type JudgeSlot, type JudgingProtocol, type Verdict } from './run-judging';
import { SPEC_LATENCY_MU } from './sim-latency';
import { seededRandom, shuffled } from './prng';

/**
 * Test and certification runs (spec 02, DESIGN §10 and §12): what a run is asked to do, its limits, its price and
 * duration, and what each question leaves behind. Pure; the statistics over the results are in run-summary.ts.
 */
export const RUN_KINDS = ['test', 'certification'] as const;
export type RunKind = (typeof RUN_KINDS)[number];
/** DESIGN §12's batch states; `launching` is the row's state between its charge and its workflow's start. */
export const BATCH_STATES = ['queued', 'running', 'judging', 'completed', 'incomplete', 'failed', 'cancelled'] as const;
export type BatchState = (typeof BATCH_STATES)[number];
export type RunState = 'launching' | BatchState;
export const ENDED_STATES: readonly RunState[] = ['completed', 'incomplete', 'failed', 'cancelled'];

/**
 * What every view of a test key's run says of it (DESIGN §10): it ran on `sim` engines, and runs on `sim` engines are
 * never evidence for a listing's certification, the estimate's `deliberation_value` or the advisor.
 */
export const SIMULATED_RUN_NOTE =
  'Simulated: a test key ran this on sim engines and billed nothing. It is never evidence: it certifies no version for listing, and neither the estimate nor the advisor reads it.';

export type BucketCounts = Record<Bucket, number>;

export interface RunSpec {
  counts: BucketCounts;
  judges: JudgeSlot[];
  repeats: number;
  protocol: JudgingProtocol;
  /** The baseline is the next tier's strongest engine instead of the mode's own strongest seat. */
  punchUp: boolean;
  /** Panel tiers the questions are dealt to, in turn. */
  tiers: Tier[];
  /** An organisation's imported set; null: questions generated fresh from `seed`. */
  questionSetId: string | null;
  seed: number;
  /** A paired re-run: the earlier run whose counts, set and seed these are; its poll reports the paired difference. */
  sameQuestionsAs?: string;
  /**
   * A test run's price of each question by id, as billed (issue 38 item 9): their sum is the run's charge, and a
   * question no verdict was read on gives back its own price. Absent on runs launched before prices were kept.
   */
  questionPrices?: Record<string, number>;
  /**
   * The equal-cost arms (issue 39 item 2): per tier, the engine sampled and how many times. Absent when the run was
   * launched with `svc.baselines: false` (or before the arms existed).
   */
  samplePlans?: SamplePlan[];
}

/** Spec 02 "Limits". */
export const RUN_LIMITS = { maxQuestions: 300, bucketMin: 1, bucketMax: 100, repeatsMin: 1, repeatsMax: 3 } as const;
/** Spec 02: 150 questions (50 per bucket), three judges, two repeats, $50 flat. */
export const CERTIFICATION = { perBucket: 50, repeats: 2, priceMicros: 50_000_000 } as const;

/**
 * A certification's run: 150 questions, three judges, two repeats, at the plus tier, drawn from `questionSetId`
 * (the real benchmark mix where it is installed, issue 39 item 1; else the generated families).
 */
export function certificationSpec(seed: number, questionSetId: string | null = null): RunSpec {
  return {
    counts: { light: CERTIFICATION.perBucket, medium: CERTIFICATION.perBucket, hard: CERTIFICATION.perBucket },
    judges: [...JUDGE_SLOTS],
    repeats: CERTIFICATION.repeats,
    protocol: 'pairwise',
    punchUp: false,
    tiers: ['plus'],
    questionSetId,
    seed,
  };
}

export function totalQuestions(counts: BucketCounts): number {
  return BUCKETS.reduce((n, b) => n + counts[b], 0);
}

/** A question's bucket is priced as a call of this depth (the classifier's scale). */
export const BUCKET_DEPTH: Readonly<Record<Bucket, Depth>> = { light: 'light', medium: 'medium', hard: 'deep' };

/**
 * Spec 02 item 2: a test run bills per question at 25% off the mode's normal price (rounded down, to the caller):
 * 25% off what the question's live call would bill, after its ceiling (issue 38 item 9), not off its gross.
 */
export function runQuestionPriceMicros(callBilledMicros: number): number {
  return Math.floor((callBilledMicros * 3) / 4);
}

/** A test run's charge: the sum of its questions' prices. */
export function sumPrices(spec: Pick<RunSpec, 'questionPrices'>): number {
  return Object.values(spec.questionPrices ?? {}).reduce((sum, price) => sum + price, 0);
}

/** A question counts as judged once at least one judge's verdict on it was read. */
export function questionJudged(r: Pick<QuestionResult, 'judgments'>): boolean {
  return r.judgments.some((j) => j.verdict !== null);
}

/**
 * What an ended run gives back (issue 38 items 7 and 9): no verdict, no charge. A certification keeps its flat price
 * only when it ended `completed` with a verdict; a test run with no judged question gives back everything; otherwise
 * each unjudged question gives back its own price (or, on a run launched before prices were kept, its share).
 */
export function runRefundMicros(run: {
  kind: RunKind;
  state: 'completed' | 'incomplete' | 'failed' | 'cancelled';
  hasVerdict: boolean;
  billedMicros: number;
  totalQuestions: number;
  questionPrices: Readonly<Record<string, number>> | undefined;
  judgedIds: ReadonlySet<string>;
}): number {
  const { billedMicros, judgedIds } = run;
  if (run.kind === 'certification') return run.state === 'completed' && run.hasVerdict ? 0 : billedMicros;
  if (judgedIds.size === 0) return billedMicros;
  if (run.questionPrices === undefined) {
    const unjudged = Math.max(0, run.totalQuestions - judgedIds.size);
    return run.totalQuestions <= 0 ? 0 : Math.floor((billedMicros * unjudged) / run.totalQuestions);
  }
  const unjudged = Object.entries(run.questionPrices).filter(([id]) => !judgedIds.has(id));
  return Math.min(
    billedMicros,
    unjudged.reduce((sum, [, price]) => sum + price, 0),
  );
}

/** Questions in flight per run unless configured (QUORUM_RUN_WINDOW). */
export const DEFAULT_RUN_WINDOW = 16;
/** The spec's engines take about this long per call (p50 28.5 s). */
const ENGINE_CALL_MINUTES = Math.exp(SPEC_LATENCY_MU) / 60_000;

/**
 * Engine calls one after another on a question's path: each seat pass and its judgment, the synthesis, then the
 * run's judges (the baseline answers while the panel does; the judges of one question run in parallel).
 */
export function questionCriticalPath(config: ModeConfig): number {
  const passes = config.critique === 'never' ? 1 : config.rounds;
  return passes * 2 + 1 + 1;
}

/** Minutes a run should take at the spec's engine latency, `window` questions at a time. */
export function estimatedRunMinutes(config: ModeConfig, total: number, window: number): number {
  const waves = Math.ceil(total / Math.max(1, window));
  return Math.max(1, Math.ceil(waves * questionCriticalPath(config) * ENGINE_CALL_MINUTES));
}

/** Questions spread over the run's tiers in turn, so every tier sees every bucket. */
export function dealTiers<Q extends Question>(questions: readonly Q[], tiers: readonly Tier[]): (Q & { tier: Tier })[] {
  return questions.map((q, i) => ({ ...q, tier: tiers[i % tiers.length] }));
}

/** One judge's verdict at one repeat; `order` lists answer indices as shown (0 = the mode's answer). */
export interface JudgmentRecord {
  slot: JudgeSlot;
  engineId: string;
  repeat: number;
  order: number[];
  /** Null when the reply was not a usable verdict: left out of the win rate, counted in `unreadVerdicts`. */
  verdict: Verdict | null;
}

export interface RecusalRecord {
  slot: JudgeSlot;
  engineId: string;
  replacedBy: string | null;
}

/** What one question of a run leaves in Postgres; the summary is computed from these rows alone. */
export interface QuestionResult {
  questionId: string;
  bucket: Bucket;
  tier: Tier;
  cluster: string;
  /** The question as asked; absent on rows written before 2026-11-25 (their reads derive it: operations/run-questions.ts). */
  question?: string;
  reference: string;
  /** A benchmark set's question: the set and the item's id there. */
  source?: { set: string; id: string };
  modeAnswer: string;
  baselineAnswer: string;
  baselineEngine: string;
  modeCorrect: boolean;
  baselineCorrect: boolean;
  judgments: JudgmentRecord[];
  recusals: RecusalRecord[];
  /** What the engines cost for this question (the run was billed up front; this is for the operator). */
  costMicros: number;
  latencyMs: number;
  /** The mode's and the baseline's own cost and latency (absent on rows written before issue 39). */
  costs?: QuestionCosts;
  /** The equal-cost arms' answers, when the run ran them. */
  arms?: QuestionArms;
  /**
   * Each seat's final answer, read by the question's answer kind and checked, and the seats' own vote beside the
   * answer the mode returned (issue 52 item 1). Absent on rows written before it.
   */
  seats?: QuestionSeats;
}

/** Progress as the run's query reports it and `GET` shows it. */
export interface RunProgress {
  state: BatchState;
  done: BucketCounts;
  total: BucketCounts;
  failed: number;
  startedAt: string | null;
  updatedAt: string;
}

export function emptyCounts(): BucketCounts {
  return { light: 0, medium: 0, hard: 0 };
}

/** An imported set's questions for a run: each bucket's drawn in a seeded order; undefined when a bucket has too few. */
export function selectQuestions(pool: readonly Question[], counts: BucketCounts, seed: number): Question[] | undefined {
  const out: Question[] = [];
  for (const bucket of BUCKETS) {
    const inBucket = pool.filter((q) => q.bucket === bucket);
    if (inBucket.length < counts[bucket]) return undefined;
    out.push(...shuffled(inBucket, seededRandom(seed + BUCKETS.indexOf(bucket))).slice(0, counts[bucket]));
  }
  return out;
}

/**
 * How long a run has taken and how long it has left: the pace so far predicts the rest; before the first answer,
 * the launch's estimate does; an ended run has nothing left. One rule for the API's poll, the CLI and the console.
 */
export function runTiming(
  run: { progress: RunProgress; finishedAt: Date | null; estimatedMinutes: number },
  now: number,
): { elapsedMs: number; leftMs: number } {
  const started = run.progress.startedAt ? Date.parse(run.progress.startedAt) : null;
  const finished = run.finishedAt?.getTime() ?? null;
  const done = totalQuestions(run.progress.done);
  const elapsedMs = started === null ? 0 : (finished ?? now) - started;
  if (finished !== null) return { elapsedMs, leftMs: 0 };
  const leftMs = done > 0 ? (elapsedMs / done) * (totalQuestions(run.progress.total) - done) : run.estimatedMinutes * 60_000;
  return { elapsedMs, leftMs };
}

import { BUCKETS, type Bucket } from './questions/types';
import type { SeatsVoteSummary } from './equal-cost';
import type { ResultGroup, RunSummary } from './run-summary';
import { CERTIFICATION, RUN_LIMITS, totalQuestions, type BucketCounts } from './runs';
import { studentTQuantile, verdictFor, type CertificationVerdict, type Interval, type WinRateSummary } from './statistics';

/**
 * The mode advisor's arithmetic (spec 02 `ask_advisor`): where a mode's run results are thin, how many more questions
 * would narrow them to a stated width, whether a certification would pass, and what its recent calls show. Every
 * number the advisor says comes from here and is returned as data beside the words. Pure.
 *
 * Variance: a bucket's clustered standard error is SE² = s²/G, where s² is the sample variance of the questions' mean
 * scores (clusteredWinRate's CR1 form reduces to exactly that), so s² = SE²·G is the spread one more question adds,
 * and G questions give a half-width of t(G−1)·√(s²/G).
 */

/** The half-width of a bucket's 95% interval the advisor aims for; wider is thin. */
export const TARGET_HALF_WIDTH = 0.1;
/** Fewer judged questions than this in a bucket is thin whatever its interval says: a t interval on a handful of questions rests on a guess of their spread. */
export const MIN_BUCKET_QUESTIONS = 10;
/** With no spread observed yet, the widest a mean score in [0, 1] can vary. */
const UNKNOWN_VARIANCE = 0.25;
const CONFIDENCE_QUANTILE = 0.975;

/** Receipt rates above these are worth a line of advice. */
export const HEALTH_THRESHOLDS = { fallbackRate: 0.1, truncationRate: 0.05, disagreementRate: 0.5, costOverQuote: 1.1 } as const;

export interface BucketAdvice {
  bucket: Bucket;
  /** Judged questions (the clusters). */
  questions: number;
  judgments: number;
  winRate: number | null;
  interval: Interval | null;
  halfWidth: number | null;
  /** Variance of a question's mean score: observed (`varianceObserved`), or the widest possible until there is a spread to see. */
  variance: number;
  varianceObserved: boolean;
  thin: boolean;
  /** More questions that would bring the half-width to the target (at most a run's per-bucket limit). */
  moreQuestions: number;
  /** The half-width expected once those questions are judged. */
  projectedHalfWidth: number;
}

export interface CertificationOutlook {
  ready: boolean;
  /** The 95% lower bound a 150-question certification should see at today's rates and spread; null while a bucket has no results. */
  projectedLowerBound: number | null;
  projectedVerdict: CertificationVerdict | null;
  reasons: string[];
}

/** What one recent call's receipt says, for the health figures. */
export interface ReceiptFacts {
  fallback: boolean;
  truncated: boolean;
  /** Null when no judge read the call (express lane). */
  converged: boolean | null;
  billedMicros: number;
  /** What the estimate would have quoted for this call; null when it cannot be priced now. */
  quotedMicros: number | null;
}

export interface ReceiptHealth {
  calls: number;
  fallbackRate: number | null;
  truncationRate: number | null;
  judgedCalls: number;
  /** Share of judged calls whose seats did not converge. */
  disagreementRate: number | null;
  pricedCalls: number;
  billedMicros: number;
  quotedMicros: number;
  /** Billed over quoted, over the calls that could be priced. */
  costOverQuote: number | null;
}

export type Recommendation =
  { kind: 'test_run'; counts: BucketCounts; reason: string } | { kind: 'certification'; reason: string } | { kind: 'none'; reason: string };

/**
 * Which way of making the one answer wins on the mode's own runs (issue 52 item 4): the answer the mode returned, or
 * its seats' own vote over the same seat outputs (`RunSummary.seatsVote`, paired by question).
 */
export interface AggregationAdvice {
  /** Questions whose seats' answers were recorded. */
  questions: number;
  modeAccuracy: number;
  voteAccuracy: number;
  /** The seats' vote's accuracy minus the returned answer's, paired by question. */
  voteMinusMode: number;
  /** Its clustered 95% interval; null when the pairs give none (`noInterval` says why). */
  interval: Interval | null;
  noInterval: string | null;
  /** Questions the vote got right and the returned answer wrong (what the final step threw away), and the reverse. */
  lost: number;
  gained: number;
  /** `vote`: the interval lies above zero; `mode`: below it (the mode's own aggregation wins); `unclear`: neither. */
  winner: 'vote' | 'mode' | 'unclear';
  /** The mode's setting to change to, when the vote wins and the mode does not vote already; else null. */
  set: { aggregation: { method: 'vote' } } | null;
}

export interface Advice {
  targetHalfWidth: number;
  buckets: BucketAdvice[];
  certification: CertificationOutlook;
  health: ReceiptHealth;
  recommendation: Recommendation;
  /** Null when no question of the runs recorded its seats' answers (runs before issue 52). */
  aggregation: AggregationAdvice | null;
}

/** What the words call each bucket (a Form's own names). */
export type BucketNames = Readonly<Record<Bucket, string>>;

const varianceOf = (w: WinRateSummary | null): { variance: number; observed: boolean } =>
  w && w.clusters >= 2 && w.standardError > 0
    ? { variance: w.standardError ** 2 * w.clusters, observed: true }
    : { variance: UNKNOWN_VARIANCE, observed: false };

export function halfWidthAt(variance: number, questions: number): number {
  if (questions < 2) return 1;
  return studentTQuantile(CONFIDENCE_QUANTILE, questions - 1) * Math.sqrt(variance / questions);
}

/** The fewest questions whose interval is no wider than `target` on each side, at `variance` per question. */
export function questionsForHalfWidth(variance: number, target: number): number {
  // t > z, so the normal answer is a lower bound to walk up from.
  let g = Math.max(2, Math.ceil((1.96 ** 2 * variance) / target ** 2));
  while (halfWidthAt(variance, g) > target) g += 1;
  return g;
}

export function bucketAdvice(bucket: Bucket, group: ResultGroup, target = TARGET_HALF_WIDTH): BucketAdvice {
  const w = group.winRate;
  const questions = w?.clusters ?? 0;
  const { variance, observed } = varianceOf(w);
  const halfWidth = w && questions >= 2 ? (w.interval.high - w.interval.low) / 2 : null;
  const thin = questions < MIN_BUCKET_QUESTIONS || halfWidth === null || halfWidth > target;
  const wanted = thin ? Math.max(questionsForHalfWidth(variance, target), MIN_BUCKET_QUESTIONS, questions + 1) - questions : 0;
  const moreQuestions = Math.min(wanted, RUN_LIMITS.bucketMax);
  return {
    bucket,
    questions,
    judgments: group.judgments,
    winRate: w?.winRate ?? null,
    interval: w && questions >= 2 ? w.interval : null,
    halfWidth,
    variance,
    varianceObserved: observed,
    thin,
    moreQuestions,
    projectedHalfWidth: halfWidthAt(variance, questions + moreQuestions),
  };
}

/**
 * What a certification (50 questions a bucket) should show: its win rate the mean of the buckets' rates, its spread
 * the buckets' own spread plus how far their rates lie apart (the certification's interval is not stratified).
 */
export function certificationOutlook(buckets: readonly BucketAdvice[], names: BucketNames): CertificationOutlook {
  const reasons: string[] = [];
  const missing = buckets.filter((b) => b.winRate === null).map((b) => names[b.bucket]);
  if (missing.length > 0) reasons.push(`no judged ${missing.join(', ')} questions yet`);
  const few = buckets.filter((b) => b.winRate !== null && b.questions < MIN_BUCKET_QUESTIONS);
  for (const b of few) reasons.push(`only ${b.questions} judged ${names[b.bucket]} questions (at least ${MIN_BUCKET_QUESTIONS} wanted)`);
  if (missing.length > 0) return { ready: false, projectedLowerBound: null, projectedVerdict: null, reasons };
  const rates = buckets.map((b) => b.winRate as number);
  const mean = rates.reduce((t, r) => t + r, 0) / rates.length;
  const variance =
    buckets.reduce((t, b) => t + b.variance, 0) / buckets.length + rates.reduce((t, r) => t + (r - mean) ** 2, 0) / rates.length;
  const total = totalQuestions({ light: CERTIFICATION.perBucket, medium: CERTIFICATION.perBucket, hard: CERTIFICATION.perBucket });
  const lowerBound = Math.max(0, mean - halfWidthAt(variance, total));
  const verdict = verdictFor(lowerBound);
  if (verdict !== 'certified')
    reasons.push(
      `projected lower bound ${lowerBound.toFixed(3)} is not above 0.500: a certification now would most likely be ${verdict.replace('_', ' ')}`,
    );
  return { ready: reasons.length === 0, projectedLowerBound: lowerBound, projectedVerdict: verdict, reasons };
}

export function receiptHealth(receipts: readonly ReceiptFacts[]): ReceiptHealth {
  const n = receipts.length;
  const share = (count: number, of: number): number | null => (of === 0 ? null : count / of);
  const judged = receipts.filter((r) => r.converged !== null);
  const priced = receipts.filter((r) => r.quotedMicros !== null);
  const billed = priced.reduce((t, r) => t + r.billedMicros, 0);
  const quoted = priced.reduce((t, r) => t + (r.quotedMicros as number), 0);
  return {
    calls: n,
    fallbackRate: share(receipts.filter((r) => r.fallback).length, n),
    truncationRate: share(receipts.filter((r) => r.truncated).length, n),
    judgedCalls: judged.length,
    disagreementRate: share(judged.filter((r) => r.converged === false).length, judged.length),
    pricedCalls: priced.length,
    billedMicros: billed,
    quotedMicros: quoted,
    costOverQuote: quoted > 0 ? billed / quoted : null,
  };
}

function recommend(buckets: readonly BucketAdvice[], outlook: CertificationOutlook, names: BucketNames): Recommendation {
  const thin = buckets.filter((b) => b.thin);
  if (thin.length > 0) {
    const counts: BucketCounts = { light: 0, medium: 0, hard: 0 };
    for (const b of thin) counts[b.bucket] = b.moreQuestions;
    return {
      kind: 'test_run',
      counts,
      reason: `a test run of ${thin.map((b) => `${b.moreQuestions} ${names[b.bucket]}`).join(', ')} questions would narrow the thin buckets to about ±${TARGET_HALF_WIDTH}`,
    };
  }
  if (outlook.ready) return { kind: 'certification', reason: 'every bucket is measured and the projected lower bound is above 0.500' };
  return {
    kind: 'none',
    reason: `the results are measured well enough, and ${outlook.reasons.join('; ')}: change the mode before spending more on runs`,
  };
}

const pct = (x: number | null): string => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`);
const f3 = (x: number): string => x.toFixed(3);

function healthLines(h: ReceiptHealth): string[] {
  if (h.calls === 0) return ['No recent calls of this mode by your organisation to read.'];
  const lines = [
    `Recent calls: ${h.calls}; fallback ${pct(h.fallbackRate)}, truncated ${pct(h.truncationRate)}, seats split ${pct(h.disagreementRate)} of ${h.judgedCalls} judged${h.costOverQuote === null ? '' : `, billed ${f3(h.costOverQuote)}× the quote`}.`,
  ];
  if ((h.fallbackRate ?? 0) > HEALTH_THRESHOLDS.fallbackRate)
    lines.push('Fallbacks are frequent: a seat engine is failing; check its provider or give it a steadier backup.');
  if ((h.truncationRate ?? 0) > HEALTH_THRESHOLDS.truncationRate)
    lines.push('Answers are often cut off by the output limit: raise seat_max_output_tokens.');
  if ((h.disagreementRate ?? 0) > HEALTH_THRESHOLDS.disagreementRate)
    lines.push('The seats disagree on most judged calls: the judge and the critique rounds carry the answer.');
  if ((h.costOverQuote ?? 0) > HEALTH_THRESHOLDS.costOverQuote)
    lines.push('Calls cost more than quoted: answers run longer than the quote assumes.');
  return lines;
}

/**
 * Whether the mode's final step keeps the answer its seats agree on: the seats' vote against the answer returned,
 * on the same seat outputs. The vote wins when its paired 95% interval lies above zero, and the advice is then to
 * set `aggregation: {method: "vote"}` (unless the mode votes already, `votes`).
 */
export function aggregationAdvice(s: SeatsVoteSummary | null | undefined, votes = false): AggregationAdvice | null {
  if (!s) return null;
  const d = s.modeMinusVote;
  // The vote minus the mode: the mode's difference turned round.
  const interval = d.interval && { low: -d.interval.high, high: -d.interval.low };
  const winner = interval === null ? 'unclear' : interval.low > 0 ? 'vote' : interval.high < 0 ? 'mode' : 'unclear';
  return {
    questions: s.questions,
    modeAccuracy: s.mode.accuracy,
    voteAccuracy: s.seatsVote.accuracy,
    voteMinusMode: d.difference === 0 ? 0 : -d.difference,
    interval,
    noInterval: d.noInterval,
    lost: s.lost,
    gained: s.gained,
    winner,
    set: winner === 'vote' && !votes ? { aggregation: { method: 'vote' } } : null,
  };
}

/**
 * The advice on a mode from its run results (pooled, or one run's) and its recent receipts; `names` are the words
 * for the buckets in the reasons it gives (the Form's); `mode` says how the mode makes its answer today.
 */
export function advise(
  summary: Pick<RunSummary, 'perBucket' | 'seatsVote'>,
  receipts: readonly ReceiptFacts[],
  names: BucketNames,
  mode: { aggregationMethod?: 'synthesis' | 'select' | 'vote' } = {},
): Advice {
  const buckets = BUCKETS.map((b) => bucketAdvice(b, summary.perBucket[b]));
  const certification = certificationOutlook(buckets, names);
  return {
    targetHalfWidth: TARGET_HALF_WIDTH,
    buckets,
    certification,
    health: receiptHealth(receipts),
    recommendation: recommend(buckets, certification, names),
    aggregation: aggregationAdvice(summary.seatsVote, mode.aggregationMethod === 'vote'),
  };
}

const points = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}`;

/** The aggregation advice in words; each number in them is one of its fields. */
function aggregationLine(a: AggregationAdvice | null): string[] {
  if (!a) return [];
  const measured =
    `on ${a.questions} questions the seats' own vote was right ${pct(a.voteAccuracy)} of the time, the answer the mode returned ${pct(a.modeAccuracy)}: ` +
    `vote minus returned ${points(a.voteMinusMode)} points${a.interval ? ` [${points(a.interval.low)}, ${points(a.interval.high)}] (95%)` : ' (no interval)'}; ` +
    `the final step turned ${a.lost} right votes wrong and ${a.gained} wrong votes right`;
  if (a.winner === 'vote')
    return [
      a.set
        ? `Aggregation: ${measured}. Set aggregation: {method: "vote"} to return the seats' answer as they voted it.`
        : `Aggregation: ${measured}. The mode votes already; the difference is its ties and unreadable seats.`,
    ];
  if (a.winner === 'mode') return [`Aggregation: ${measured}. Keep the mode's own aggregation: it beat the seats' vote.`];
  return [`Aggregation: ${measured}. Too close to call: neither the vote nor the mode's own aggregation clearly wins.`];
}

/** The advice in words; each number in them is one of the advice's fields. */
export function adviceLines(advice: Advice, names: BucketNames): string[] {
  const { certification, recommendation } = advice;
  const lines = advice.buckets.map((b) => {
    const name = names[b.bucket];
    const more = `${b.moreQuestions} more would give about ±${f3(b.projectedHalfWidth)}`;
    if (b.winRate === null) return `${name}: no judged questions; ${more}.`;
    const width = b.halfWidth === null ? '' : ` ±${f3(b.halfWidth)}`;
    return `${name}: ${b.questions} questions, win rate ${f3(b.winRate)}${width}${b.thin ? ` — thin; ${more}` : ''}.`;
  });
  lines.push(
    certification.ready
      ? `Ready to certify: projected lower bound ${f3(certification.projectedLowerBound as number)}.`
      : `Not ready to certify: ${certification.reasons.join('; ')}.`,
    ...healthLines(advice.health),
    ...aggregationLine(advice.aggregation),
    `Next: ${recommendation.reason}.`,
  );
  return lines;
}

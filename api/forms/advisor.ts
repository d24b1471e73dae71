import type { QuoteRecord } from '../../db/repositories/quotes';
import { adviceLines, type BucketAdvice } from '../../domain/advisor';
import { BUCKETS } from '../../domain/questions/types';
import type { BucketCounts } from '../../domain/runs';
import type { AdviceResult } from '../../operations/advisor';
import type { Approval } from '../../operations/quotes';
import type { LaunchView } from '../../operations/run-launch';
import { usd, type JsonObject } from './json';
import type { RunNames } from './names';

/** The advisor's answers (spec 02 `ask_advisor`, `approve_quote`), in the Form's names for buckets and modes. */
export interface AdvisorSerialiser {
  advice(result: AdviceResult): JsonObject;
  quote(quote: QuoteRecord): JsonObject;
  approval(approval: Approval, baseUrl: string): JsonObject;
}

const round4 = (x: number | null): number | null => (x === null ? null : Math.round(x * 10_000) / 10_000);

export function advisorSerialiser(names: RunNames, launch: (v: LaunchView, baseUrl: string) => JsonObject): AdvisorSerialiser {
  /** A run's counts as a launch takes them in this Form (empty buckets left out). */
  const questions = (c: BucketCounts): JsonObject =>
    Object.fromEntries(BUCKETS.filter((b) => c[b] > 0).map((b) => [names.bucket[b], c[b]]));
  const bucket = (b: BucketAdvice): JsonObject => ({
    bucket: names.bucket[b.bucket],
    questions: b.questions,
    judgments: b.judgments,
    win_rate: round4(b.winRate),
    interval: b.interval && { low: round4(b.interval.low), high: round4(b.interval.high) },
    half_width: round4(b.halfWidth),
    variance_per_question: round4(b.variance),
    variance_observed: b.varianceObserved,
    thin: b.thin,
    more_questions: b.moreQuestions,
    projected_half_width: round4(b.projectedHalfWidth),
  });
  const quote = (q: QuoteRecord): JsonObject => ({
    quote_id: q.id,
    kind: q.kind,
    model: q.model,
    run: {
      questions: questions(q.request.counts),
      judges: q.request.judges,
      judge_repeats: q.request.repeats,
      judging_protocol: q.request.protocol,
      tiers: q.request.tiers,
      punch_up: q.request.punchUp,
    },
    price_usd: usd(q.priceMicros),
    payer: q.payer,
    state: q.state,
    expires_at: q.expiresAt.toISOString(),
    next: 'approve_quote with this quote_id launches exactly this run, once, at no more than price_usd.',
  });
  return {
    quote,
    advice(r) {
      const a = r.advice;
      const h = a.health;
      return {
        model: r.model,
        mode_key: names.modeKey(r.mode),
        mode_version: r.mode.version,
        question: r.question,
        answer: adviceLines(a, names.bucket).join('\n'),
        target_half_width: a.targetHalfWidth,
        runs: r.runs.map((run) => ({ batch_id: run.id, kind: run.kind, state: run.state })),
        buckets: a.buckets.map(bucket),
        thin_buckets: a.buckets.filter((b) => b.thin).map((b) => names.bucket[b.bucket]),
        certification: {
          ready: a.certification.ready,
          projected_lower_bound: round4(a.certification.projectedLowerBound),
          projected_verdict: a.certification.projectedVerdict,
          reasons: a.certification.reasons,
        },
        receipts: {
          calls: h.calls,
          fallback_rate: round4(h.fallbackRate),
          truncation_rate: round4(h.truncationRate),
          judged_calls: h.judgedCalls,
          disagreement_rate: round4(h.disagreementRate),
          priced_calls: h.pricedCalls,
          billed_usd: usd(h.billedMicros),
          quoted_usd: usd(h.quotedMicros),
          cost_over_quote: round4(h.costOverQuote),
        },
        // Issue 52 item 4: the seats' own vote against the answer the mode returned, on its runs; null before them.
        aggregation: a.aggregation && {
          questions: a.aggregation.questions,
          mode_accuracy: round4(a.aggregation.modeAccuracy),
          vote_accuracy: round4(a.aggregation.voteAccuracy),
          vote_minus_mode: round4(a.aggregation.voteMinusMode),
          interval: a.aggregation.interval && { low: round4(a.aggregation.interval.low), high: round4(a.aggregation.interval.high) },
          no_interval_reason: a.aggregation.noInterval,
          lost: a.aggregation.lost,
          gained: a.aggregation.gained,
          winner: a.aggregation.winner,
          set: a.aggregation.set,
        },
        recommendation: {
          kind: a.recommendation.kind,
          reason: a.recommendation.reason,
          ...(a.recommendation.kind === 'test_run' ? { questions: questions(a.recommendation.counts) } : {}),
        },
        ...(r.quote ? { quote: quote(r.quote) } : {}),
        ...(r.quoteUnavailable
          ? { quote_unavailable: r.quoteUnavailable.code, quote_unavailable_message: r.quoteUnavailable.message }
          : {}),
      };
    },
    approval: (a, baseUrl) => ({ ...launch(a.launch, baseUrl), quote_id: a.quote.id }),
  };
}

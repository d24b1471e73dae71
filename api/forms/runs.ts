import type { Bucket } from '../../domain/questions/types';
import { VERDICT_COVERAGE, type Coverage, type JudgmentCount, type ResultGroup, type RunSummary } from '../../domain/run-summary';
import { BUCKETS } from '../../domain/questions/types';
import type { Interval } from '../../domain/statistics';
import { runTiming, SIMULATED_RUN_NOTE, type RunKind } from '../../domain/runs';
import { statusPath, type LaunchView } from '../../operations/run-launch';
import type { PairedView } from '../../operations/run-paired';
import type { CertificationAttempt } from '../../db/repositories/certifications';
import type { RunRecord } from '../../db/repositories/runs';
import type { RunView } from '../../operations/run-poll';
import type { QuestionPageView, RunQuestionView } from '../../operations/run-questions';
import { advisorSerialiser, type AdvisorSerialiser } from './advisor';
import { armsJson, questionArmsJson, questionSeatsJson, samplePlansJson, seatsVoteJson } from './equal-cost';
import { usd, type Json, type JsonObject } from './json';
import type { RunNames } from './names';

/**
 * The run resources of spec 02 (accepted launches, the `batch` and `certification` objects), one shape for both
 * Forms: a Form names the buckets (`light` or `easy`) and the mode (`id` or ticker) its own way.
 */
export interface RunSerialiser extends AdvisorSerialiser {
  launch(view: LaunchView, baseUrl: string): JsonObject;
  poll(view: RunView): JsonObject;
  /** The poll's `questions` list (`include=questions`). */
  questions(page: QuestionPageView): JsonObject;
  /** One question's record: an item of that list, or a line of `format=jsonl`. */
  question(view: RunQuestionView, includeTranscript: boolean): JsonObject;
}

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;
const interval = (i: Interval): JsonObject => ({ low: round4(i.low), high: round4(i.high) });

function perBucket<T>(names: RunNames, values: Record<Bucket, T>, shape: (v: T) => Json): JsonObject {
  return Object.fromEntries(BUCKETS.map((b) => [names.bucket[b], shape(values[b])]));
}

function resultGroup(g: ResultGroup): JsonObject {
  return {
    questions: g.questions,
    judgments: g.judgments,
    win_rate: g.winRate && round4(g.winRate.winRate),
    interval: g.winRate && interval(g.winRate.interval),
    standard_error: g.winRate && round4(g.winRate.standardError),
    mode_accuracy: { rate: round4(g.mode.rate), correct: g.mode.correct, n: g.mode.n, interval: interval(g.mode.interval) },
    baseline_accuracy: {
      rate: round4(g.baseline.rate),
      correct: g.baseline.correct,
      n: g.baseline.n,
      interval: interval(g.baseline.interval),
    },
  };
}

/** What a certification certified: the tier its questions were asked at, and where its questions came from. */
export function certifiedScope(
  names: RunNames,
  tiers: readonly string[],
  set: { source: 'generated' | 'imported'; id: string | null; counts: Record<Bucket, number> },
): JsonObject {
  return {
    tier: tiers.join(','),
    question_set: {
      source: set.source,
      id: set.id,
      questions: BUCKETS.reduce((n, b) => n + set.counts[b], 0),
      per_bucket: perBucket(names, set.counts, (n) => n),
    },
  };
}

/** The rule that turns attempts into a verdict (issue 38 item 3), as every view of one states it. */
export const ATTEMPT_RULE =
  'Attempt k on a mode configuration certifies only when its one-sided lower bound at α_k = 0.02·6/(π²k²) is above 0.50 (Σα_k = 0.02, under 2.5% by the measured excess of the t bound: at a true win rate of 0.5 no number of attempts certifies more than 2.5% of the time); otherwise provisional when the plain 95% lower bound is above 0.40.';

/** Each attempt on the configuration, in launch order, with its verdict (null while it runs or when it ended without one). */
export function attemptsJson(attempts: readonly CertificationAttempt[]): JsonObject[] {
  return attempts.map((a) => ({
    batch_id: a.runId,
    attempt: a.attempt,
    state: a.state,
    verdict: a.verdict,
    alpha: a.alpha,
    interval: a.interval && interval(a.interval),
    adjusted_lower_bound: a.adjustedLowerBound === null ? null : round4(a.adjustedLowerBound),
    mode_version: a.modeVersion,
    launched_at: a.launchedAt.toISOString(),
    finished_at: a.finishedAt?.toISOString() ?? null,
  }));
}

function certification(names: RunNames, run: RunRecord): JsonObject | null {
  const s = run.summary;
  if (!s || s.verdict === null) return null;
  const w = s.overall.winRate;
  return {
    verdict: s.verdict,
    ...certifiedScope(names, run.spec.tiers, {
      source: run.spec.questionSetId ? 'imported' : 'generated',
      id: run.spec.questionSetId,
      counts: run.spec.counts,
    }),
    win_rate: w && round4(w.winRate),
    interval: w && interval(w.interval),
    interval_note: w?.intervalNote ?? null,
    lower_bound: w && round4(w.interval.low),
    confidence: 0.95,
    // Null on a certification that ended before attempts were counted (its verdict is the plain ladder's).
    attempt: s.attempt
      ? { number: s.attempt.attempt, alpha: s.attempt.alpha, adjusted_lower_bound: round4(s.attempt.adjustedLowerBound) }
      : null,
    standard_error: w && round4(w.standardError),
    degrees_of_freedom: w?.degreesOfFreedom ?? null,
    clusters: w?.clusters ?? 0,
    judgments: s.overall.judgments,
    mode_accuracy: round4(s.overall.mode.rate),
    baseline_accuracy: round4(s.overall.baseline.rate),
    judge_agreement: { fleiss_kappa: s.judgeAgreement === null ? null : round4(s.judgeAgreement) },
    position_consistency: {
      pairs: s.positionConsistency.pairs,
      flips: s.positionConsistency.flips,
      flip_rate: round4(s.positionConsistency.flipRate),
      threshold: s.positionConsistency.threshold,
      flagged: s.positionConsistency.flagged,
    },
    ladder: {
      certified: 'adjusted_lower_bound > 0.50 (the bound at the attempt’s α)',
      provisional: 'otherwise, 0.40 < lower_bound',
      not_certified: 'lower_bound <= 0.40',
      attempts: ATTEMPT_RULE,
    },
  };
}

/**
 * `svc.paired` (issue 28 item 4): no difference before two questions are judged in both runs, and no interval where
 * the pairs show no spread (`no_interval_reason` says which).
 */
function paired({ against, difference: d }: PairedView): JsonObject {
  const shown = d.clusters >= 2;
  return {
    against,
    pairs: d.pairs,
    difference: shown ? round4(d.difference) : null,
    ci_low: d.interval && round4(d.interval.low),
    ci_high: d.interval && round4(d.interval.high),
    confidence: 0.95,
    standard_error: d.interval && round4(d.standardError),
    degrees_of_freedom: d.degreesOfFreedom,
    no_interval_reason: d.noInterval,
  };
}

/**
 * One question of a run as stored: its answers' texts only on request (their length always) and, like the question
 * and its reference answer, only once the run has ended (`sealed` until then); each judge's verdict
 * on the mode's answer per repeat with the order it was shown the answers in, exact-answer correctness as the
 * question's checker read it when the run recorded it, what the engines cost, and the question's wall time.
 */
function questionRecord(names: RunNames, { result: r, question, sealed }: RunQuestionView, includeTranscript: boolean): JsonObject {
  const texts = includeTranscript && !sealed;
  return {
    id: r.questionId,
    bucket: names.bucket[r.bucket],
    tier: r.tier,
    cluster: r.cluster,
    sealed,
    // A benchmark set's item: its set and its id there, so a result can be traced to the published item (sealed too:
    // the id names the question).
    source: sealed ? null : (r.source ?? null),
    question: sealed ? null : question,
    reference_answer: sealed ? null : r.reference,
    mode_answer: texts ? r.modeAnswer : null,
    mode_answer_chars: r.modeAnswer.length,
    mode_correct: r.modeCorrect,
    baseline_engine: r.baselineEngine,
    baseline_answer: texts ? r.baselineAnswer : null,
    baseline_answer_chars: r.baselineAnswer.length,
    baseline_correct: r.baselineCorrect,
    judgments: r.judgments.map((j) => ({ judge: j.slot, engine: j.engineId, repeat: j.repeat, order: j.order, verdict: j.verdict })),
    recusals: r.recusals.map((x) => ({ slot: x.slot, engine: x.engineId, replaced_by: x.replacedBy })),
    cost_usd: usd(r.costMicros),
    latency_ms: r.latencyMs,
    // The mode's and the baseline's own figures, which the equal-cost arms' k is chosen from (issue 39 item 2).
    costs: r.costs
      ? {
          mode_usd: usd(r.costs.modeMicros),
          mode_seats_usd: usd(r.costs.modeSeatsMicros),
          baseline_usd: usd(r.costs.baselineMicros),
          mode_latency_ms: r.costs.modeLatencyMs,
          baseline_latency_ms: r.costs.baselineLatencyMs,
        }
      : null,
    arms: r.arms ? questionArmsJson(r.arms, texts, sealed) : null,
    // Each seat's answer and the seats' own vote beside the mode's (issue 52 item 1); null on rows before it.
    seats: r.seats ? questionSeatsJson(r.seats, sealed) : null,
  };
}

/** Why a run's results are short of what it was paid for: no readable verdict, too few judged questions or judgments. */
function coverageWarnings(names: RunNames, kind: RunKind, s: RunSummary | null): string[] {
  const c = s?.coverage;
  if (!s || !c) return [];
  if (c.judged === 0)
    return [
      `No judge's verdict could be read (${s.unreadVerdicts} unreadable): the run has no results, and its questions were credited back.`,
    ];
  if (c.met) return [];
  const pct = (x: number): string => `${Math.round(x * 100)}%`;
  const j = c.judgments;
  const short = j
    ? Object.entries(j.perJudge).flatMap(([slot, byBucket]) =>
        BUCKETS.filter(
          (b) => byBucket[b].planned > 0 && byBucket[b].readable < VERDICT_COVERAGE.perJudgePerBucket * byBucket[b].planned,
        ).map((b) => `${slot} ${byBucket[b].readable} of ${byBucket[b].planned} in ${names.bucket[b]}`),
      )
    : [];
  return [
    `Judged ${c.judged} of ${c.total} questions (${pct(c.judged / c.total)})${j ? `, ${j.readable} of ${j.planned} planned judgments read (${pct(j.planned === 0 ? 0 : j.readable / j.planned)})` : ''}${short.length > 0 ? `; short: ${short.join(', ')}` : ''}. ${kind === 'certification' ? 'A verdict' : 'Using a run as evidence'} needs ${pct(VERDICT_COVERAGE.overall)} of questions overall and ${pct(VERDICT_COVERAGE.perBucket)} in every bucket, ${pct(VERDICT_COVERAGE.judgments)} of planned judgments, and ${pct(VERDICT_COVERAGE.perJudgePerBucket)} of each judge's in every bucket.`,
  ];
}

/** `coverage` of the batch: questions judged, and (from 2026-11-27) judgments read overall, per bucket and per judge. */
function coverageJson(names: RunNames, c: Coverage): JsonObject {
  const count = (x: JudgmentCount): JsonObject => ({ readable: x.readable, planned: x.planned });
  return {
    judged: c.judged,
    total: c.total,
    per_bucket: perBucket(names, c.perBucket, (b) => ({ judged: b.judged, total: b.total })),
    required_overall: VERDICT_COVERAGE.overall,
    required_per_bucket: VERDICT_COVERAGE.perBucket,
    judgments: c.judgments
      ? {
          readable: c.judgments.readable,
          planned: c.judgments.planned,
          per_bucket: perBucket(names, c.judgments.perBucket, count),
          per_judge: Object.fromEntries(
            Object.entries(c.judgments.perJudge).map(([slot, byBucket]) => [slot, perBucket(names, byBucket, count)]),
          ),
          required_overall: VERDICT_COVERAGE.judgments,
          required_per_judge_per_bucket: VERDICT_COVERAGE.perJudgePerBucket,
        }
      : null,
    met: c.met,
  };
}

export function runSerialiser(names: RunNames): RunSerialiser {
  const counts = (c: Record<Bucket, number>): JsonObject => perBucket(names, c, (n) => n);
  const launch = (v: LaunchView, baseUrl: string): JsonObject => {
    const common: JsonObject = {
      ok: true,
      dry_run: v.dryRun,
      batch_id: v.run?.id ?? null,
      model: v.model,
      mode_key: names.modeKey(v.mode),
      total_questions: v.totalQuestions,
      per_bucket: counts(v.counts),
      total_cost_usd: v.dryRun ? usd(v.priceMicros) : undefined,
      billed_usd: v.dryRun ? undefined : usd(v.priceMicros),
      estimated_minutes: v.estimatedMinutes,
      status_url: v.run ? `${baseUrl}${statusPath(v.kind, v.run.id)}` : null,
      note: v.note,
    };
    if (v.dryRun && v.requiresListing) common.requires_listing = true;
    // The dry run's quote (issue 38 item 8): its launch honours it by body; the id and expiry say which and until when.
    if (v.quote) common.svc = { quote_id: v.quote.id, quote_expires_at: v.quote.expiresAt.toISOString() };
    // The equal-cost arms it runs and what they add to its price (issue 39 item 2).
    if (v.equalCost !== undefined)
      common.svc = {
        ...(common.svc as JsonObject | undefined),
        baselines: v.equalCost && {
          arms: ['self_moa', 'majority_vote'],
          samples: samplePlansJson(v.equalCost.plans),
          price_usd: usd(v.equalCost.priceMicros),
        },
      };
    return common;
  };
  return {
    launch,
    ...advisorSerialiser(names, launch),
    question: (view, includeTranscript) => questionRecord(names, view, includeTranscript),
    questions: (page) => ({
      object: 'list',
      data: page.questions.map((q) => questionRecord(names, q, page.includeTranscript)),
      first_id: page.questions[0]?.result.questionId ?? null,
      last_id: page.questions.at(-1)?.result.questionId ?? null,
      has_more: page.hasMore,
    }),
    poll({ run, mode, progress, paired: pairing, attempts }) {
      const done = BUCKETS.reduce((n, b) => n + progress.done[b], 0);
      const { elapsedMs, leftMs } = runTiming({ progress, finishedAt: run.finishedAt, estimatedMinutes: run.estimatedMinutes }, Date.now());
      const s = run.summary;
      const batch: JsonObject = {
        id: run.id,
        kind: run.kind,
        state: progress.state,
        model: run.model,
        mode_key: mode ? names.modeKey(mode) : run.modeId,
        mode_version: run.modeVersion,
        // A test key's run answers on `sim` engines: labelled, and never evidence (DESIGN §10).
        simulated: run.keyKind === 'test',
        judging: {
          protocol: run.spec.protocol,
          judges: run.spec.judges,
          repeats: run.spec.repeats,
          punch_up: run.spec.punchUp,
          tiers: run.spec.tiers,
          question_set: run.spec.questionSetId,
        },
        progress: {
          done,
          total: run.totalQuestions,
          failed: progress.failed,
          per_bucket: counts(progress.done),
          per_bucket_total: counts(run.spec.counts),
        },
        created_at: run.createdAt.toISOString(),
        started_at: progress.startedAt,
        updated_at: progress.updatedAt,
        finished_at: run.finishedAt?.toISOString() ?? null,
        elapsed_seconds: Math.round(elapsedMs / 1000),
        estimated_seconds_left: Math.ceil(leftMs / 1000),
        billed_usd: usd(run.billedMicros),
        refunded_usd: usd(run.refundedMicros),
        engine_cost_usd: s ? usd(s.costMicros) : null,
        // A run none of whose verdicts could be read has no results to show (it ended `incomplete`).
        results:
          s && s.coverage?.judged !== 0
            ? { per_bucket: perBucket(names, s.perBucket, resultGroup), overall: resultGroup(s.overall) }
            : null,
        coverage: s?.coverage ? coverageJson(names, s.coverage) : null,
        recusals: s ? s.recusals.map((r) => ({ slot: r.slot, engine: r.engineId, replaced_by: r.replacedBy, questions: r.questions })) : [],
        unread_verdicts: s?.unreadVerdicts ?? 0,
        // The equal-cost arms (issue 39 item 2): k per tier from the launch, each arm's figures once the run has ended.
        baselines: run.spec.samplePlans
          ? { samples: samplePlansJson(run.spec.samplePlans), arms: s?.equalCost ? armsJson(s.equalCost) : null }
          : null,
        // The answer returned against the seats' own vote (issue 52 item 1), once the run has ended.
        seats_vote: s?.seatsVote ? seatsVoteJson(s.seatsVote) : null,
        warnings: [
          ...(run.keyKind === 'test' ? [SIMULATED_RUN_NOTE] : []),
          ...coverageWarnings(names, run.kind, s),
          ...(s?.positionConsistency.flagged
            ? [
                `Judges changed their verdict on ${Math.round(s.positionConsistency.flipRate * 100)}% of mirrored pairs (threshold ${s.positionConsistency.threshold * 100}%): the order, not the answers, moved them.`,
              ]
            : []),
        ],
        error: run.errorCode ? { code: run.errorCode, message: run.errorMessage } : null,
      };
      // Only a test run can be paired (a certification draws fresh questions).
      if (run.kind === 'test') return { ok: true, batch, ...(pairing && { svc: { paired: paired(pairing) } }) };
      return { ok: true, batch, certification: certification(names, run), attempts: attemptsJson(attempts ?? []) };
    },
  };
}

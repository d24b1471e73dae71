import type { Form } from '../../domain/form';
import { shownAnswer } from '../../domain/aggregation';
import { TRANSCRIPT_DELETED_NOTE } from '../../domain/retention';
import type { Outcome, SeatPass, StaffCall } from '../../domain/outcome';
import type { TierRate, TierRates } from '../../domain/estimate';
import type { EstimateView } from '../../operations/estimate';
import type { ModelView } from '../../operations/models';
import type { RequestSchemas } from '../../operations/requests/common';
import { usd, type JsonObject } from './json';
import { armsJson } from './equal-cost';
import { attemptsJson, ATTEMPT_RULE, certifiedScope, type RunSerialiser } from './runs';
import type { RunNames } from './names';

const SIMULATED_NOTE: Readonly<Record<ModelView['simulatedBecause'], string>> = {
  no_credentials:
    'Development deployment: no engine of their design (nor a backup) has a provider key here, so simulated sim/* engines answer in their place. Production never does this.',
  test_key: 'A test key runs every seat and staff engine on simulated sim/* engines and bills nothing.',
};

/**
 * The head of a model listing entry in both Forms: OpenAI's `Model` (`id`, `object`, `created`, `owned_by`), which
 * strictly typed clients (Rust `async-openai`) require whole. `created` is when the mode was first saved (Unix
 * seconds); `owned_by` is spec 01's constant neutral owner label (Form A), sent by Form B too: who made a mode is in
 * its ticker and certification, not in a field a client may match on.
 */
export const MODEL_OWNER = 'quorum';
export function modelHead(v: ModelView, id: string): JsonObject {
  return { id, object: 'model', created: Math.floor(v.created.getTime() / 1000), owned_by: MODEL_OWNER };
}

/** `svc.simulated_engines` of a model listing, present only when a simulated engine would answer for a designed one. */
export function simulatedDisclosure(v: ModelView): JsonObject {
  if (v.simulatedEngines.length === 0) return {};
  return { simulated_engines: { engines: v.simulatedEngines, note: SIMULATED_NOTE[v.simulatedBecause] } };
}

/**
 * `svc.evidence` of a model listing (issue 39 item 2): the newest live run's equal-cost arms, each with the mode's
 * paired difference; null when no run measured them.
 */
export function evidenceJson(v: ModelView): JsonObject | null {
  return (
    v.evidence && {
      batch_id: v.evidence.runId,
      arms: armsJson(v.evidence.arms),
      method:
        'Accuracy against the gold answers (Wilson 95%); mode minus arm paired by question, clustered 95% interval (docs/runs.md, "Equal-cost baselines").',
    }
  );
}

/**
 * `svc.certification` of a model listing (issue 28 item 5, issue 38 items 3–5): the listed certification of the
 * configuration of the version this caller calls, null when none: its verdict, both bounds (the plain 95% one and
 * the one at its attempt's α), the tier and question set it certified, and every attempt on the configuration with
 * its verdict. `simulated` is a test key's run, which certifies nothing and is shown only to its own organisation.
 */
export function certificationJson(v: ModelView, names: RunNames): JsonObject | null {
  const c = v.certification;
  return (
    c && {
      verdict: c.verdict,
      ...certifiedScope(names, c.tiers, c.questionSet),
      lower_bound: c.lowerBound,
      interval: c.interval && { low: c.interval.low, high: c.interval.high },
      attempt: c.attempt,
      alpha: c.alpha,
      adjusted_lower_bound: c.adjustedLowerBound,
      batch_id: c.runId,
      completed_at: c.completedAt.toISOString(),
      mode_version: c.modeVersion,
      mode_config_hash: c.configHash,
      simulated: c.simulated,
      attempts: attemptsJson(c.attempts),
      rule: ATTEMPT_RULE,
    }
  );
}

/**
 * `svc.seating` of a model listing: per tier, each seat's designed engine and the one that would answer it now
 * (`answers`, null when none can run here), and the judge and synthesis (null on the express lane, which calls neither).
 */
export function seatingJson(v: ModelView): JsonObject {
  const place = (p: { designed: string; answers: string | null } | null): JsonObject | null =>
    p && { designed: p.designed, answers: p.answers };
  // A certification ran its questions at its own tier: its verdict is that tier's alone (issue 38 item 5).
  const certifiedTiers: readonly string[] = v.certification?.tiers ?? [];
  return Object.fromEntries(
    v.seating.map((t) => [
      t.tier,
      {
        lane: t.lane,
        seats: t.seats.map((s) => ({ role: s.role, designed: s.designed, answers: s.answers })),
        judge: place(t.judge),
        synthesis: place(t.synthesis),
        certification: certifiedTiers.includes(t.tier) ? (v.certification?.verdict ?? null) : null,
      },
    ]),
  );
}

/** One Form's presentation: its request validators and its serialisers, all over the same domain values. */
export interface FormSerialiser {
  form: Form;
  requests: RequestSchemas;
  completion(outcome: Outcome, replayed: boolean): JsonObject;
  estimate(view: EstimateView): JsonObject;
  model(view: ModelView): JsonObject;
  receipt(outcome: Outcome, includeTranscript: boolean): JsonObject;
  noReceipt(requestId: string, reason: string, status: string): JsonObject;
  runs: RunSerialiser;
}

/** The chat-completion shape both Forms share; each Form supplies its `finish_reason`, usage extras and `svc`. */
export function completionShape(o: Outcome, model: string, finishReason: string, usageExtra: JsonObject, svc: JsonObject): JsonObject {
  return {
    id: `chatcmpl-${o.requestId}`,
    object: 'chat.completion',
    created: Math.floor(Date.parse(o.createdAt) / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: o.answer }, finish_reason: finishReason }],
    usage: {
      prompt_tokens: o.usage.promptTokens,
      completion_tokens: o.usage.completionTokens,
      total_tokens: o.usage.promptTokens + o.usage.completionTokens,
      ...usageExtra,
    },
    svc,
  };
}

/**
 * Beyond the spec (issue 40 item 6): the seats a mode's quorum left behind, per round, with why; absent when none was
 * (every call of a mode without a quorum). Their cancelled calls' billed rows are in the receipt's `seats`, `late` set.
 */
export function lateSeatsJson(o: Outcome): JsonObject[] | undefined {
  const late = o.seatPasses.filter((p) => p.late);
  return late.length > 0 ? late.map((p) => ({ role: p.role, round: p.round, model_used: p.modelUsed, reason: p.late ?? '' })) : undefined;
}

/** Fields present only on an idempotent replay (spec 01 replay rules); a replay whose texts are gone says so. */
export function replayFields(o: Outcome): JsonObject {
  return {
    replayed: true,
    seats_answered: o.seatsAnswered,
    answer_truncated: o.finishReason === 'length',
    transcript_deleted: transcriptDeletedJson(o),
  };
}

/**
 * Beyond the spec (issue 41 item 5): when and why the call's texts were deleted, with a note saying so; absent
 * while they are kept. The figures are the call's as billed.
 */
export function transcriptDeletedJson(o: Outcome): JsonObject | undefined {
  const gone = o.transcriptDeleted;
  return gone && { at: gone.at, reason: gone.reason, note: TRANSCRIPT_DELETED_NOTE[gone.reason] };
}

/**
 * `svc.aggregation` (issue 52): how the answer was made on a mode that declares `aggregation`; null when the call
 * recorded none (a mode without it, the express lane). An answer read from a seat is the seat's words (a `short_text`
 * answer, or any answer of a `Final answer:` line), so, as a seat's `content`, each is null unless `showAnswers` (the
 * texts are shown) and the call's texts were not deleted; the counts, seats and decision stay.
 */
export function aggregationJson(o: Outcome, showAnswers: boolean): JsonObject | null {
  const a = o.aggregation;
  if (!a) return null;
  const shown = showAnswers && !o.transcriptDeleted;
  const answer = (key: string | null): string | null => (shown && key !== null ? shownAnswer(key) : null);
  return {
    method: a.method,
    answer_kind: a.answerKind,
    ballots: a.ballots.map((b) => ({ seat: b.role, answer: answer(b.answer), read_by: b.readBy })),
    votes: a.votes.map((v) => ({ answer: answer(v.answer), votes: v.votes })),
    winner: { seat: a.winner.role, answer: answer(a.winner.answer) },
    decided_by: a.decidedBy,
    seats_asked: a.seatsAsked,
    early_stop: a.earlyStop,
    ballot_call: a.ballotCall && {
      model_used: a.ballotCall.modelUsed,
      latency_ms: a.ballotCall.latencyMs,
      tokens_in: a.ballotCall.tokensIn,
      tokens_out: a.ballotCall.tokensOut,
      real_cost_usd: usd(a.ballotCall.realCostMicros),
    },
    synthesis: a.synthesis,
    answer_line_added: a.answerLineAdded,
  };
}

function seatRow(row: SeatPass, includeTranscript: boolean, extra: JsonObject): JsonObject {
  return {
    role: row.role,
    model_used: row.modelUsed,
    round_number: row.round,
    judge_score: row.judgeScore,
    is_best_seat: row.isBest,
    fallback_used: row.fallbackUsed,
    original_model: row.originalModel,
    tokens_in: row.tokensIn,
    tokens_out: row.tokensOut,
    started_at: row.startedAt,
    ended_at: row.endedAt,
    latency_ms: row.latencyMs,
    content: includeTranscript ? row.content : undefined,
    // What the mode asked this seat's engine with (its sampling and system prompt), where it set any.
    tuning: row.tuning
      ? { temperature: row.tuning.temperature ?? null, seed: row.tuning.seed ?? null, system_prompt: row.tuning.systemPrompt ?? null }
      : undefined,
    late: row.late,
    ...extra,
  };
}

function staffCall(call: StaffCall | null): JsonObject | null {
  return (
    call && { model_used: call.modelUsed, latency_ms: call.latencyMs, fallback_used: call.fallbackUsed, original_model: call.originalModel }
  );
}

/**
 * The receipt fields both Forms carry. `tokenChargeMicros` differs: Form A's pass-through half includes the
 * platform fee (so it and `q_surcharge_usd` sum to `billed_usd`), Form B's equals the engines' cost.
 */
export function receiptShape(
  o: Outcome,
  opts: {
    includeTranscript: boolean;
    tokenChargeMicros: number;
    modeField: JsonObject;
    seatExtra: (row: SeatPass) => JsonObject;
    extra: JsonObject;
  },
): JsonObject {
  return {
    request_id: o.requestId,
    ...opts.modeField,
    status: o.status,
    billed_usd: usd(o.money.billedMicros),
    token_charge_usd: usd(opts.tokenChargeMicros),
    q_surcharge_usd: usd(o.money.modeFeeMicros),
    prompt_tokens: o.usage.promptTokens,
    completion_tokens: o.usage.completionTokens,
    rounds: o.rounds,
    seat_count: o.seats,
    lane: o.lane,
    difficulty_score: o.classification.difficulty,
    task_type: o.classification.taskType,
    hallucination_risk: o.classification.hallucinationRisk,
    minority_insight_likely: o.classification.minorityInsightLikely,
    best_seat: o.bestSeat && {
      model_used: o.bestSeat.modelUsed,
      judge_score: o.bestSeat.judgeScore,
      content: opts.includeTranscript ? o.bestSeat.content : undefined,
    },
    seats: o.seatPasses.map((row) => seatRow(row, opts.includeTranscript, opts.seatExtra(row))),
    staff: {
      judge: staffCall(o.staff.judge),
      synthesis: staffCall(o.staff.synthesis),
      grounding: { fired: o.staff.grounding.fired, model_used: o.staff.grounding.fired ? o.staff.grounding.modelUsed : null },
      // Additive (issue 38): the classifier model's call, in the call's tokens and bill; null when the heuristic classified.
      classifier: o.staff.classifier
        ? {
            model_used: o.staff.classifier.modelUsed,
            latency_ms: o.staff.classifier.latencyMs,
            tokens_in: o.staff.classifier.tokensIn,
            tokens_out: o.staff.classifier.tokensOut,
            real_cost_usd: usd(o.staff.classifier.realCostMicros),
          }
        : null,
    },
    ...opts.extra,
    // Additive (issue 52): how the answer was made; null on a call that recorded none.
    aggregation: aggregationJson(o, opts.includeTranscript),
    late_seats: lateSeatsJson(o),
    transcript_deleted: transcriptDeletedJson(o),
    latency_ms: o.latencyMs,
    created_at: o.createdAt,
    completed_at: o.completedAt,
  };
}

export function receiptEnvelope(receipt: JsonObject): JsonObject {
  return { ok: true, receipt_available: true, receipt };
}

/** An observed rate is a ratio; six decimals is a micro-dollar per token. */
function perMtok(microsPerToken: number): number {
  return Math.round(microsPerToken * 1_000_000) / 1_000_000;
}

/** Per-Mtok rates as USD numbers (a rate in micro-dollars per token is USD per 1M tokens). */
export function rateJson(rate: TierRate): JsonObject {
  // Spec 01: with too little data the rates are null, `n: 0` and a reason; the configured rate is in `rate_note`.
  if (rate.reason) return { input_usd_per_mtok: null, output_usd_per_mtok: null, n: 0, basis: rate.basis, reason: rate.reason };
  return {
    input_usd_per_mtok: perMtok(rate.inputMicrosPerToken),
    output_usd_per_mtok: perMtok(rate.outputMicrosPerToken),
    n: rate.n,
    basis: rate.basis,
    reason: rate.reason,
  };
}

export function ratesJson(rates: TierRates): JsonObject {
  return { experience: rateJson(rates.experience), plus: rateJson(rates.plus), pro: rateJson(rates.pro) };
}

/** Estimate fields both Forms carry. */
export function estimateShape(v: EstimateView, modeField: JsonObject, estimatedPriceMicros: number, extra: JsonObject): JsonObject {
  return {
    request_id: v.requestId,
    model: v.model,
    ...modeField,
    depth: v.classification.depth,
    difficulty_score: v.classification.difficulty,
    task_type: v.classification.taskType,
    estimated_price_usd: usd(estimatedPriceMicros),
    billed_usd: 0,
    ...extra,
    timing_ms: { total: v.timing.total, classify: v.timing.classify },
  };
}

import type { RunNames } from './names';
import { BUCKET_NAMES } from '../../domain/form';
import { MIN_SAMPLE } from '../../domain/estimate';
import type { Money, Outcome, RoundSummary } from '../../domain/outcome';
import { formBRequests } from '../../operations/requests/b';
import { ceilingUsd, usd, type JsonObject } from './json';
import {
  aggregationJson,
  certificationJson,
  evidenceJson,
  completionShape,
  estimateShape,
  lateSeatsJson,
  modelHead,
  ratesJson,
  receiptEnvelope,
  receiptShape,
  replayFields,
  seatingJson,
  simulatedDisclosure,
  type FormSerialiser,
} from './shared';
import { runSerialiser } from './runs';

/** Form B: modes by ticker, per-Mtok mode fee, engines at actual cost plus the platform fee, cap credit over the ceiling. */

/** The bill's three parts net of the cap credit, which comes off the mode fee first, then the platform fee, then the engines. */
function netParts(m: Money): { gateway: number; platformFee: number; modeFee: number } {
  let credit = m.capCreditMicros;
  const take = (part: number): number => {
    const taken = Math.min(part, credit);
    credit -= taken;
    return part - taken;
  };
  const modeFee = take(m.modeFeeMicros);
  const platformFee = take(m.platformFeeMicros);
  return { gateway: take(m.gatewayMicros), platformFee, modeFee };
}

function deliberationJson(rounds: readonly RoundSummary[]): JsonObject[] {
  return rounds.map((r) => ({
    round: r.round,
    seats: r.seats.map((s) => ({ role: s.role, model: s.model, score: s.score })),
    divergence: r.divergence,
    converged: r.converged,
  }));
}

function completionSvc(o: Outcome): JsonObject {
  const m = o.money;
  const net = netParts(m);
  return {
    request_id: o.requestId,
    mode: o.ticker,
    rounds: o.rounds,
    seats: o.seats,
    seats_answered: o.seatsAnswered,
    converged: o.converged,
    capped: m.capCreditMicros > 0,
    remaining_friction: o.factualConflict ? 'factual_conflict' : null,
    contested_passage: o.contestedPassage && {
      seat: o.contestedPassage.seat,
      quote: o.contestedPassage.quote,
      why: o.contestedPassage.why,
    },
    best_seat_rationale: o.bestSeatRationale,
    best_seat_judged_by: o.bestSeatJudgedBy,
    deliberation: deliberationJson(o.deliberation),
    divergence_first_round: o.divergenceFirst,
    divergence_final_round: o.divergenceFinal,
    pricing_rule: 'per_mtok',
    gateway_usd: usd(m.gatewayMicros),
    token_charge_usd: usd(m.gatewayMicros),
    surcharge_usd: usd(m.modeFeeMicros),
    platform_fee_usd: usd(m.platformFeeMicros),
    cap_credit_usd: usd(m.capCreditMicros),
    billed_usd: usd(m.billedMicros),
    billed_net: {
      gateway_usd: usd(net.gateway),
      token_charge_usd: usd(net.gateway),
      platform_fee_usd: usd(net.platformFee),
      mode_fee_usd: usd(net.modeFee),
    },
    latency_ms: o.latencyMs,
    engines: o.engines,
    substitutions: o.substitutions.map((s) => ({ role: s.role, original: s.original, used: s.used, reason: s.reason })),
    seats_unavailable: o.seatsUnavailable.length > 0 ? o.seatsUnavailable.map((u) => ({ role: u.role, reason: u.reason })) : undefined,
    late_seats: lateSeatsJson(o),
    staff_unavailable: o.staffUnavailable.length > 0 ? o.staffUnavailable.map((u) => ({ role: u.role, reason: u.reason })) : undefined,
    aggregation: aggregationJson(o, true),
    persisted: true,
  };
}

function completion(o: Outcome, replayed: boolean): JsonObject {
  // Spec 01 replay rule 4: a replayed svc holds only these fields.
  const svc: JsonObject = replayed ? { request_id: o.requestId, mode: o.ticker, ...replayFields(o) } : completionSvc(o);
  // Form B runs in full past its ceiling, so only `stop` and `length` occur.
  const finish = o.finishReason === 'length' ? 'length' : 'stop';
  return completionShape(o, o.ticker, finish, { completion_tokens_details: { reasoning_tokens: o.usage.reasoningTokens } }, svc);
}

const RATE_NOTE =
  "The rate is the mode's fee only, in USD per 1M tokens processed across all seats and the deliberation; output is priced at 4x input. Engines bill at actual cost plus the platform fee, outside the rate.";

/** Buckets and modes as this Form names them in its run resources and listings. */
const RUN_NAMES: RunNames = { bucket: BUCKET_NAMES.B, modeKey: (m) => m.ticker };

export const formB: FormSerialiser = {
  form: 'B',
  requests: formBRequests,
  completion,
  estimate: (v) => {
    const q = v.quote;
    const rate = v.rates[v.tier];
    const estimate: JsonObject | null = q
      ? {
          rule: 'per_mtok',
          gateway_usd: usd(q.gatewayMicros),
          platform_fee_usd: usd(q.platformFeeMicros),
          token_charge_usd: usd(q.gatewayMicros),
          mode_fee_usd: usd(q.modeFeeMicros),
          gross_usd: usd(q.grossMicros),
          cap_credit_usd: usd(q.capCreditMicros),
          total_usd: usd(q.totalMicros),
          capped: q.capped,
          ceiling_usd: ceilingUsd(q.ceilingMicros),
          tier: v.tier,
          depth: v.classification.depth,
          basis: {
            kind: rate.reason ? 'engine_rates' : 'api_calls',
            n: rate.n,
            statistic: rate.reason ? 'catalog_rates' : 'mode_fee_per_recorded_token',
            min_sample: MIN_SAMPLE,
            lane: q.express ? 'express' : 'panel',
            rounds: q.rounds,
            // Additive (issue 52): a mode's first wave, priced as expected; null when every seat is asked at once.
            first_wave: q.firstWave && {
              seats: q.firstWave.firstWave,
              of: q.firstWave.seats,
              rest_asked_share: q.firstWave.restAskedShare,
              basis: q.firstWave.basis,
              n: q.firstWave.n,
            },
          },
          per_mtok_by_tier: ratesJson(v.rates),
        }
      : null;
    const dv = v.classification.deliberationValue;
    return estimateShape(v, { mode: v.mode.ticker }, q?.modeFeeMicros ?? 0, {
      estimate,
      deliberation_value: { verdict: dv.verdict, reason: dv.reason, basis: dv.basis, evidence: dv.evidence },
    });
  },
  model: (view) => {
    const { mode, rates, ceilingMicros } = view;
    return {
      ...modelHead(view, mode.ticker),
      svc: {
        name: mode.name,
        description: mode.description,
        use_when: mode.useWhen,
        pricing: {
          basis: 'per_mtok',
          covers: 'mode_fee',
          engines: 'actual_cost_plus_platform_fee',
          tiers: ratesJson(rates),
          rate_note: `${RATE_NOTE} Until ${MIN_SAMPLE} calls are recorded on a tier, its rate is the configured ${mode.config.fees.perMtokInputUsd} USD per 1M input tokens and ${mode.config.fees.perMtokInputUsd * 4} per 1M output tokens.`,
          per_call_cost_ceiling_usd: ceilingUsd(ceilingMicros),
        },
        provider_families: view.providerFamilies,
        seating: seatingJson(view),
        certification: certificationJson(view, RUN_NAMES),
        evidence: evidenceJson(view),
        includes_deliberation: mode.config.express !== 'always',
        ...simulatedDisclosure(view),
      },
    };
  },
  receipt: (o, includeTranscript) => {
    const m = o.money;
    const net = netParts(m);
    return receiptEnvelope(
      receiptShape(o, {
        includeTranscript,
        tokenChargeMicros: m.gatewayMicros,
        modeField: { mode: o.ticker },
        seatExtra: (row) => ({
          source: row.source,
          real_cost_usd: usd(row.realCostMicros),
          fee_rate: row.feeRatePpm / 1_000_000,
          fee_usd: usd(row.feeMicros),
        }),
        extra: {
          cap_credit_usd: usd(m.capCreditMicros),
          charges: {
            gateway_usd: usd(m.gatewayMicros),
            platform_fee_usd: usd(m.platformFeeMicros),
            mode_fee_usd: usd(m.modeFeeMicros),
            basis: 'per_mtok',
            cap_credit_usd: usd(m.capCreditMicros),
            billed_usd: usd(m.billedMicros),
            billed_net: { gateway_usd: usd(net.gateway), platform_fee_usd: usd(net.platformFee), mode_fee_usd: usd(net.modeFee) },
          },
          payer: o.payer,
          seats_unavailable: o.seatsUnavailable.map((u) => ({ role: u.role, reason: u.reason })),
          staff_unavailable: o.staffUnavailable.map((u) => ({ role: u.role, reason: u.reason })),
        },
      }),
    );
  },
  noReceipt: (requestId, reason, status) => ({ ok: true, receipt_available: false, reason, request_id: requestId, status }),
  runs: runSerialiser(RUN_NAMES),
};

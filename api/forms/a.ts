import type { RunNames } from './names';
import { BUCKET_NAMES } from '../../domain/form';
import type { Outcome } from '../../domain/outcome';
import { formARequests } from '../../operations/requests/a';
import { usd, type JsonObject } from './json';
import {
  aggregationJson,
  certificationJson,
  evidenceJson,
  completionShape,
  estimateShape,
  lateSeatsJson,
  modelHead,
  receiptEnvelope,
  receiptShape,
  replayFields,
  seatingJson,
  simulatedDisclosure,
  type FormSerialiser,
} from './shared';
import { runSerialiser } from './runs';

/** Form A: modes by key, depth surcharges, provider families; `finish_reason: cost_cap` when the ceiling stopped the run. */

/** Form A shows the families of the engines that answered, not model ids. */
function families(engines: readonly string[]): string[] {
  return [...new Set(engines.map((id) => id.split('/')[0]))];
}

function completion(o: Outcome, replayed: boolean): JsonObject {
  const svc: JsonObject = {
    request_id: o.requestId,
    mode_key: o.modeId,
    mode_config_hash: o.configHash,
    rounds: o.rounds,
    seats: o.seats,
    seats_answered: o.seatsAnswered,
    // One seat alone has nothing to disagree with.
    converged: o.converged ?? true,
    capped: o.status === 'capped',
    // What this request billed: a replay bills nothing (the receipt keeps the original charge), so a client summing
    // `billed_usd` over its calls counts each charge once.
    surcharge_usd: replayed ? 0 : usd(o.money.modeFeeMicros),
    billed_usd: replayed ? 0 : usd(o.money.billedMicros),
    latency_ms: o.latencyMs,
    engines: families(o.engines),
    late_seats: lateSeatsJson(o),
    aggregation: aggregationJson(o, true),
    persisted: true,
    ...(replayed ? replayFields(o) : {}),
  };
  return completionShape(o, o.modeId, o.finishReason, {}, svc);
}

/** Buckets and modes as this Form names them in its run resources and listings. */
const RUN_NAMES: RunNames = { bucket: BUCKET_NAMES.A, modeKey: (m) => m.id };

export const formA: FormSerialiser = {
  form: 'A',
  requests: formARequests,
  completion,
  estimate: (v) => {
    const modeFee = v.quote?.modeFeeMicros ?? v.mode.config.fees.surchargeByDepthMicros[v.classification.depth];
    return estimateShape(v, { mode_key: v.mode.id }, v.quote?.totalMicros ?? modeFee, {});
  },
  model: (view) => {
    const { mode } = view;
    const fees = mode.config.fees;
    return {
      ...modelHead(view, mode.id),
      svc: {
        mode_key: mode.id,
        name: mode.name,
        description: mode.description,
        price_tier: null,
        pricing: {
          // The flat value is the fallback and the ceiling of the per-depth surcharges: the deepest one.
          q_surcharge_usd: usd(Math.max(...Object.values(fees.surchargeByDepthMicros))),
          q_surcharge_by_depth: {
            light: usd(fees.surchargeByDepthMicros.light),
            medium: usd(fees.surchargeByDepthMicros.medium),
            deep: usd(fees.surchargeByDepthMicros.deep),
          },
          q_surcharge_express_usd: usd(fees.expressSurchargeMicros),
        },
        providers: view.providerFamilies,
        seating: seatingJson(view),
        certification: certificationJson(view, RUN_NAMES),
        evidence: evidenceJson(view),
        ...simulatedDisclosure(view),
      },
    };
  },
  receipt: (o, includeTranscript) =>
    receiptEnvelope(
      receiptShape(o, {
        includeTranscript,
        tokenChargeMicros: o.money.gatewayMicros + o.money.platformFeeMicros,
        modeField: { mode_key: o.modeId, mode_config_hash: o.configHash },
        seatExtra: () => ({}),
        extra: {},
      }),
    ),
  noReceipt: (_requestId, reason) => ({ ok: true, receipt_available: false, reason }),
  runs: runSerialiser(RUN_NAMES),
};

import type { Knex } from 'knex';
import type { WaveStats } from '../../domain/estimate';
import { TIERS, type Tier } from '../../domain/modes';
import type { DbOrTrx } from './shared';

/**
 * Recorded calls of a mode's configuration per tier: the basis of Form B's per-Mtok quote once there are enough. Only
 * calls of this configuration (`config_hash`, which its fees are part of) count (issue 38 item 10): a release with
 * another fee starts its own observed rate instead of blending into the last one's. Only live, billed API-key calls
 * count (spec 01 `basis: api_calls`, DESIGN §7): a test key's call bills nothing and a connected app's call on a plan
 * pays no mode fee, so counting them would pull the published rate toward zero. A call's key is its request's
 * `api_key_id`; a connected app's (`app:…`) and a console's (`console:…`) name no row of `api_keys`.
 *
 * Kept as a running count (`mode_call_stats`, issue 42 item 3) that the settle statement adds each counted call to, so
 * an estimate reads one row per tier however many receipts the mode has; `quorum audit` recounts it from the receipts
 * (RECOUNTED_CALL_STATS).
 *
 * Beside them, a first wave's share (issue 52, migration 036): of the counted calls, those whose receipt says how many
 * seats round 1 asked (`aggregation.seatsAsked`, a panel call of a mode with `aggregation`) and of those the ones that
 * asked every seat (no `earlyStop`). The configuration is the row's key, so whether it has a first wave is the row's:
 * the estimate prices a first wave's other seats from them (domain/estimate.ts `firstWavePricing`) and a configuration
 * without one never reads them. Counted from the receipt alone, so the audit recounts them exactly: a lab call's
 * draft configuration is not kept once replaced.
 */
export interface CallStats {
  n: number;
  inputTokens: number;
  outputTokens: number;
  modeFeeMicros: number;
  /** Of the `n` calls, those that recorded round 1's seats asked, and of those the ones that asked every seat. */
  wave: WaveStats;
}

const NONE: CallStats = { n: 0, inputTokens: 0, outputTokens: 0, modeFeeMicros: 0, wave: { n: 0, allAsked: 0 } };

export async function recordedCallStats(db: DbOrTrx, mode: { id: string; configHash: string }): Promise<Record<Tier, CallStats>> {
  const rows = (await db('mode_call_stats')
    .where({ mode_id: mode.id, config_hash: mode.configHash })
    .select('tier', 'n', 'input_tokens', 'output_tokens', 'mode_fee_micros', 'wave_calls', 'wave_all_asked')) as CallStatsRow[];
  return callStatsByTier(rows);
}

/** One row of `mode_call_stats` as read (its sums are bigint, so text). */
export interface CallStatsRow {
  tier: Tier;
  n: number;
  input_tokens: string;
  output_tokens: string;
  mode_fee_micros: string;
  wave_calls: number;
  wave_all_asked: number;
}

/** Each tier's count from the rows of one configuration (none recorded: zero). */
export function callStatsByTier(rows: readonly CallStatsRow[]): Record<Tier, CallStats> {
  const byTier = new Map(rows.map((r) => [r.tier, r]));
  return Object.fromEntries(
    TIERS.map((tier) => {
      const r = byTier.get(tier);
      const stats: CallStats = r
        ? {
            n: r.n,
            inputTokens: Number(r.input_tokens),
            outputTokens: Number(r.output_tokens),
            modeFeeMicros: Number(r.mode_fee_micros),
            wave: { n: r.wave_calls, allAsked: r.wave_all_asked },
          }
        : NONE;
      return [tier, stats];
    }),
  ) as Record<Tier, CallStats>;
}

/**
 * The settle statement's part: adds the receipt just written (the `receipt` CTE, empty when the call was settled
 * already) to its mode's count when it is a counted call. One statement with the receipt, so a retried settle never
 * counts twice. `aggregation`: the outcome's record of round 1 (absent: none, so not a first-wave call).
 */
export function countSettledCall(
  trx: Knex,
  call: {
    requestId: string;
    modeId: string;
    configHash: string;
    tier: Tier;
    promptTokens: number;
    completionTokens: number;
    modeFeeMicros: number;
    paidByPlan: boolean;
    aggregation: { seatsAsked?: number; earlyStop?: boolean } | undefined;
  },
): Knex.Raw {
  const wave = firstWaveCounts(call.aggregation);
  return trx.raw(
    `insert into mode_call_stats as s (mode_id, config_hash, tier, n, input_tokens, output_tokens, mode_fee_micros,
                                       wave_calls, wave_all_asked)
     select ?, ?, ?, 1, ?, ?, ?, ?::int, ?::int from receipt
      where not ?::boolean
        and exists (select 1 from requests r join api_keys k on k.id = r.api_key_id where r.id = ? and k.mode = 'live')
     on conflict (mode_id, config_hash, tier) do update
        set n = s.n + 1,
            input_tokens = s.input_tokens + excluded.input_tokens,
            output_tokens = s.output_tokens + excluded.output_tokens,
            mode_fee_micros = s.mode_fee_micros + excluded.mode_fee_micros,
            wave_calls = s.wave_calls + excluded.wave_calls,
            wave_all_asked = s.wave_all_asked + excluded.wave_all_asked`,
    [
      call.modeId,
      call.configHash,
      call.tier,
      call.promptTokens,
      call.completionTokens,
      call.modeFeeMicros,
      wave.waveCalls,
      wave.allAsked,
      call.paidByPlan,
      call.requestId,
    ],
  );
}

/**
 * What one counted call adds to its row's first-wave counters: a call whose outcome recorded round 1's seats asked is
 * one of `wave_calls`, and one of `wave_all_asked` unless its first wave stopped early.
 */
export function firstWaveCounts(aggregation: { seatsAsked?: number; earlyStop?: boolean } | undefined): {
  waveCalls: 0 | 1;
  allAsked: 0 | 1;
} {
  if (aggregation?.seatsAsked === undefined) return { waveCalls: 0, allAsked: 0 };
  return { waveCalls: 1, allAsked: aggregation.earlyStop === true ? 0 : 1 };
}

/** The counts recomputed from every receipt with the same rule, for the auditor (`mode_id`, `config_hash`, `tier`, …). */
export const RECOUNTED_CALL_STATS = `
  select x.mode_id, x.config_hash, x.tier, count(*)::int as n, sum(x.prompt_tokens)::bigint as input_tokens,
         sum(x.completion_tokens)::bigint as output_tokens, sum(x.mode_fee_micros)::bigint as mode_fee_micros,
         count(*) filter (where jsonb_typeof(x.outcome->'aggregation'->'seatsAsked') = 'number')::int as wave_calls,
         count(*) filter (where jsonb_typeof(x.outcome->'aggregation'->'seatsAsked') = 'number'
                            and (x.outcome->'aggregation'->>'earlyStop')::boolean is not true)::int as wave_all_asked
    from receipts x join requests r on r.id = x.request_id join api_keys k on k.id = r.api_key_id
   where k.mode = 'live' and x.outcome->>'payer' is distinct from 'plan'
   group by x.mode_id, x.config_hash, x.tier`;

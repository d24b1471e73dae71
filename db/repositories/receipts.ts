import type { Knex } from 'knex';
import type { Classification, Lane } from '../../domain/classifier';
import type { Tier } from '../../domain/modes';
import { QuorumError } from '../../domain/errors';
import type { Outcome, ReceiptStatus, Settlement } from '../../domain/outcome';
import { storableJson } from '../../domain/storable-text';
import * as ledger from './ledger';
import { countSettledCall } from './mode-call-stats';
import { settlePlanCharge } from './plans';
import { isDeterministicDbError, type DbOrTrx } from './shared';

/** Every amount the settlement writes must be a whole, non-negative number of micro-dollars. */
function unreadableAmounts(o: Outcome): string[] {
  const amounts: Record<string, number> = {
    gateway: o.money.gatewayMicros,
    platform_fee: o.money.platformFeeMicros,
    mode_fee: o.money.modeFeeMicros,
    cap_credit: o.money.capCreditMicros,
    billed: o.money.billedMicros,
    ...Object.fromEntries(
      o.seatPasses.flatMap((p) => [
        [`${p.role}_r${p.round}_cost`, p.realCostMicros],
        [`${p.role}_r${p.round}_fee`, p.feeMicros],
      ]),
    ),
  };
  return Object.entries(amounts)
    .filter(([, v]) => !Number.isSafeInteger(v) || v < 0)
    .map(([k, v]) => `${k}=${v}`);
}

/**
 * The statement inserting a call's seat rows, once its receipt was (the `receipt` CTE of the settle); an organisation
 * that keeps no transcripts (issue 41 item 5) has their texts written blank.
 */
function seatRowsInsert(trx: Knex.Transaction, o: Outcome): Knex.Raw {
  const seats = o.seatPasses.map((p) => ({
    request_id: o.requestId,
    role: p.role,
    round_number: p.round,
    model_used: p.modelUsed,
    original_model: p.originalModel,
    fallback_used: p.fallbackUsed,
    tokens_in: p.tokensIn,
    tokens_out: p.tokensOut,
    started_at: p.startedAt,
    ended_at: p.endedAt,
    latency_ms: p.latencyMs,
    judge_score: p.judgeScore,
    is_best_seat: p.isBest,
    source: p.source,
    real_cost_micros: p.realCostMicros,
    fee_rate_ppm: p.feeRatePpm,
    fee_micros: p.feeMicros,
    content: p.content,
  }));
  const columns = Object.keys(seats[0] ?? { request_id: null });
  // The organisation's retention read once for all the seats, not per row.
  const selected = columns.map((c) => (c === 'content' ? "case when zr.zero then '' else content end" : c));
  return trx.raw(
    `insert into receipt_seats (${columns.join(', ')})
     select ${selected.join(', ')} from jsonb_populate_recordset(null::receipt_seats, cast(:seats as jsonb)),
            (select zero_retention(:orgId) as zero) zr
      where exists (select 1 from receipt)`,
    { seats: JSON.stringify(seats), orgId: o.orgId },
  );
}

/**
 * Charge, receipt, seat passes and the request's final state in one transaction; idempotent by request id, so a
 * retried settle never charges twice. A live key is charged (Form B in full with the excess credited back, Form A
 * held at the ceiling); a connected app's call on a plan charges its real cost to the plan's ledger and leaves the
 * organisation's balance alone; a test key's call is recorded and bills nothing. `cost_unreadable` when the outcome cannot
 * be written at all (a retry would fail the same way).
 */

export async function settleOutcome(db: Knex, input: Settlement): Promise<void> {
  // An engine's text is stored whatever characters it holds: a settle never fails on what a provider returned.
  const o = storableJson(input.outcome);
  const unreadable = unreadableAmounts(o);
  if (unreadable.length > 0)
    throw new QuorumError('cost_unreadable', `The call's cost cannot be read (${unreadable.join(', ')}); nothing was billed.`);
  await db
    .transaction(async (trx) => {
      // The receipt, its seat passes, the request's end and the mode's call count in one statement, the receipt first: its key says whether
      // this request was settled already (a retried settle changes nothing, and the rest is skipped with it).
      const receipt = trx('receipts')
        .insert({
          request_id: o.requestId,
          org_id: o.orgId,
          mode_id: o.modeId,
          mode_version: input.modeVersion,
          config_hash: o.configHash,
          status: o.status,
          lane: o.lane,
          tier: o.tier,
          gateway_micros: o.money.gatewayMicros,
          platform_fee_micros: o.money.platformFeeMicros,
          mode_fee_micros: o.money.modeFeeMicros,
          cap_credit_micros: o.money.capCreditMicros,
          billed_micros: o.money.billedMicros,
          prompt_tokens: o.usage.promptTokens,
          completion_tokens: o.usage.completionTokens,
          latency_ms: o.latencyMs,
          // An organisation that keeps no transcripts (issue 41 item 5) has the texts blanked as they are written.
          outcome: trx.raw(
            "(select case when z then blank_transcript(j, 'zero_retention') else j end from (select cast(? as jsonb) j, zero_retention(?) z) v)",
            [JSON.stringify(o), o.orgId],
          ),
          transcript_deleted_at: trx.raw('case when zero_retention(?) then now() end', [o.orgId]),
          created_at: o.createdAt,
          completed_at: o.completedAt,
        })
        .onConflict('request_id')
        .ignore()
        .returning('request_id');
      const seatRows = seatRowsInsert(trx, o);
      const ended = trx('requests')
        .where({ id: o.requestId })
        .whereExists(trx.select(trx.raw('1')).from('receipt'))
        .update({
          // Form B's capped call may run again under its key; Form A's is a finished answer. A cancelled one keeps its
          // status (issue 40), and its key may run again.
          state: o.status === 'cancelled' ? 'cancelled' : o.status === 'capped' && input.form === 'B' ? 'capped' : 'succeeded',
          finish_reason: o.finishReason,
          answer_truncated: o.finishReason === 'length',
          seats_answered: o.seatsAnswered,
          completed_at: o.completedAt,
        });
      const counted = countSettledCall(trx, {
        requestId: o.requestId,
        modeId: o.modeId,
        configHash: o.configHash,
        tier: o.tier,
        promptTokens: o.usage.promptTokens,
        completionTokens: o.usage.completionTokens,
        modeFeeMicros: o.money.modeFeeMicros,
        paidByPlan: o.payer === 'plan',
      });
      const inserted = (await trx
        .with('receipt', receipt)
        .with('seats', seatRows)
        .with('ended', ended)
        .with('counted', counted)
        .select('request_id')
        .from('receipt')) as {
        request_id: string;
      }[];
      if (inserted.length === 0) return;
      if (input.billed && o.payer === 'plan') {
        await settlePlanCharge(trx, { requestId: o.requestId, chargeMicros: BigInt(o.money.billedMicros) });
      } else if (input.billed) {
        const gross = o.money.gatewayMicros + o.money.platformFeeMicros + o.money.modeFeeMicros;
        const charge = input.form === 'B' ? gross : o.money.billedMicros;
        await ledger.settleIn(trx, {
          orgId: o.orgId,
          requestId: o.requestId,
          chargeMicros: BigInt(charge),
          capCreditMicros: BigInt(o.money.capCreditMicros),
        });
      }
    })
    .catch((err: unknown) => {
      if (!isDeterministicDbError(err)) throw err;
      throw new QuorumError(
        'cost_unreadable',
        'The deliberation could not be recorded; nothing was billed. Retry with the same Idempotency-Key.',
      );
    });
}

/** What the advisor reads of one recent call: enough to re-quote it and to count fallbacks, cut-offs and splits. */
export interface RecentCall {
  tier: Tier;
  promptTokens: number;
  billedMicros: number;
  classification: Classification;
  finishReason: string;
  converged: boolean | null;
  substitutions: number;
}

/** An organisation's latest calls of a mode (its own receipts only), newest first. */
/**
 * The organisation's latest calls of a mode, newest first. A test key's call answered on `sim` engines and is never
 * evidence (DESIGN §10); a call's key is its request's `api_key_id` (a connected app's `app:…` names no key row and
 * runs real engines, so it counts).
 */
export async function recentCalls(db: DbOrTrx, input: { orgId: string; modeId: string; limit: number }): Promise<RecentCall[]> {
  const rows = (await db('receipts as x')
    .join('requests as r', 'r.id', 'x.request_id')
    .leftJoin('api_keys as k', 'k.id', 'r.api_key_id')
    .where({ 'x.org_id': input.orgId, 'x.mode_id': input.modeId })
    .whereRaw("k.mode is distinct from 'test'")
    .orderBy('x.created_at', 'desc')
    .limit(input.limit)
    .select(
      'x.tier',
      'x.prompt_tokens',
      'x.billed_micros',
      db.raw("x.outcome->'classification' as classification"),
      db.raw("x.outcome->>'finishReason' as finish_reason"),
      db.raw("(x.outcome->>'converged')::boolean as converged"),
      db.raw("coalesce(jsonb_array_length(x.outcome->'substitutions'), 0) as substitutions"),
    )) as {
    tier: Tier;
    prompt_tokens: number;
    billed_micros: bigint | string;
    classification: Classification;
    finish_reason: string;
    converged: boolean | null;
    substitutions: number;
  }[];
  return rows.map((r) => ({
    tier: r.tier,
    promptTokens: r.prompt_tokens,
    billedMicros: Number(r.billed_micros),
    classification: r.classification,
    finishReason: r.finish_reason,
    converged: r.converged,
    substitutions: Number(r.substitutions),
  }));
}

/** One line of the console's list of calls: what a person scans for, without the answers' text. */
export interface ReceiptLine {
  requestId: string;
  createdAt: Date;
  modeId: string;
  ticker: string;
  lane: Lane | null;
  tier: Tier;
  status: ReceiptStatus;
  seats: number;
  seatsAnswered: number;
  /** Seat passes and staff calls that ran on a backup engine. */
  fallbacks: number;
  billedMicros: number;
  /** Form B: what was credited back over the call's ceiling (0 under it, and always on Form A). */
  capCreditMicros: number;
  latencyMs: number;
}

/** An organisation's receipts, newest first, a page at a time. */
export async function listReceipts(db: DbOrTrx, input: { orgId: string; limit: number; offset: number }): Promise<ReceiptLine[]> {
  const rows = (await db('receipts')
    .where({ org_id: input.orgId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'request_id', order: 'desc' },
    ])
    .limit(input.limit)
    .offset(input.offset)
    .select(
      'request_id',
      'created_at',
      'mode_id',
      'lane',
      'tier',
      'status',
      'billed_micros',
      'cap_credit_micros',
      'latency_ms',
      db.raw("outcome->>'ticker' as ticker"),
      db.raw("(outcome->>'seats')::int as seats"),
      db.raw("(outcome->>'seatsAnswered')::int as seats_answered"),
      // Counted in the stored outcome, so the list never reads the seats' answers.
      db.raw(`(select count(*)::int from jsonb_array_elements(outcome->'seatPasses') p where (p->>'fallbackUsed')::boolean)
        + coalesce((outcome#>>'{staff,judge,fallbackUsed}')::boolean, false)::int
        + coalesce((outcome#>>'{staff,synthesis,fallbackUsed}')::boolean, false)::int as fallbacks`),
    )) as {
    request_id: string;
    created_at: Date;
    mode_id: string;
    lane: Lane | null;
    tier: Tier;
    status: ReceiptStatus;
    billed_micros: bigint | string;
    cap_credit_micros: bigint | string;
    latency_ms: number;
    ticker: string;
    seats: number;
    seats_answered: number;
    fallbacks: number;
  }[];
  return rows.map((r) => ({
    requestId: r.request_id,
    createdAt: r.created_at,
    modeId: r.mode_id,
    ticker: r.ticker,
    lane: r.lane,
    tier: r.tier,
    status: r.status,
    seats: r.seats,
    seatsAnswered: r.seats_answered,
    fallbacks: r.fallbacks,
    billedMicros: Number(r.billed_micros),
    capCreditMicros: Number(r.cap_credit_micros),
    latencyMs: r.latency_ms,
  }));
}
